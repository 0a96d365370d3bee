"""OpenCL side of hpu: device choice, the Python-to-OpenCL-C translator, kernels."""
