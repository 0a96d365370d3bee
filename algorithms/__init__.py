"""Ready divide-and-conquer algorithms, written only against hpu's public API.

Each module holds a plain recursive function decorated with
``@hpu.divide_and_conquer`` and, where it helps, a convenience wrapper.
"""
