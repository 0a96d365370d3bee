"""Calibration profiles: what one machine measured, stored as JSON, checked before use.

Why a module of its own: the planner, ``hpu info`` and ``hpu calibrate`` all
need the same answers to "which profile applies here, and can it be trusted?",
and none of them should have to import Numba or compile a kernel to get them.

Where a profile lives
    ``platformdirs.user_config_dir("hpu")/profiles/<slug>-<hash>.json``, one
    file per :class:`ProfileKey` (host, device name, driver version, hpu
    version): the readable slug names host and device, the hash of the whole
    key keeps names unique and safe.  ``HPU_PROFILE=/some/file.json`` replaces
    that path for reading *and* writing.

What "trusted" means
    A profile is JSON (never pickle), carries a ``schema`` number, and every
    field is checked for presence, type and range when it is read.  A file
    that fails any check is *corrupt*; one whose key differs from the current
    machine (another host, device, driver or hpu version) is *stale*.  Both
    raise :class:`hpu.ProfileError` naming the file and the fix
    (``hpu calibrate``) and are never replaced behind the user's back: a
    profile someone measured carefully is not overwritten because it could not
    be read, and a shared ``HPU_PROFILE`` from another machine is not silently
    used or silently clobbered.  A *missing* profile is not an error:
    :func:`load_profile` returns ``None``.

What the planner gets
    :func:`active_profile`: the stored profile if there is one; otherwise, once,
    a quick calibration that is saved (with a one-line notice on stderr); or,
    with ``HPU_NO_AUTOCALIBRATE=1``, :meth:`Profile.builtin`, conservative
    values that make the device look slow and transfers dear, so that a plan
    made without measurements errs towards keeping work on the CPU.

Writes are atomic (a temporary file in the same folder, then ``os.replace``),
so a crash or a second process never leaves half a profile behind.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import json
import math
import os
import platform as _platform
import re
import sys
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hpu._errors import HpuError, ProfileError

__all__ = [
    "SCHEMA",
    "ENV_PROFILE",
    "ENV_NO_AUTOCALIBRATE",
    "ProfileKey",
    "Sweeps",
    "Profile",
    "profiles_dir",
    "profile_path",
    "current_key",
    "read_profile",
    "load_profile",
    "save_profile",
    "active_profile",
    "autocalibrate_disabled",
]

#: Version of the JSON layout; a file with another number is refused as stale.
SCHEMA = 2  # 2: gamma from hpu's own translated merge; g of a CPU device capped at its cores
ENV_PROFILE = "HPU_PROFILE"
ENV_NO_AUTOCALIBRATE = "HPU_NO_AUTOCALIBRATE"

_FIX = "run `hpu calibrate` to measure a new one"

Pairs = tuple[tuple[int, float], ...]


# --------------------------------------------------------------------------- key

@dataclass(frozen=True)
class ProfileKey:
    """What a profile is valid for: measurements do not carry over between any of these."""

    host: str
    device: str
    driver_version: str
    hpu_version: str

    @property
    def digest(self) -> str:
        return _digest(self)

    @property
    def filename(self) -> str:
        """``<host>_<device>-<hash>.json`` with only ``[a-z0-9._-]`` in it."""
        return _filename(self)


# a run plans on every call: each key is hashed and named once per process, not per call
@functools.lru_cache(maxsize=64)
def _digest(key: ProfileKey) -> str:
    text = json.dumps(asdict(key), sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@functools.lru_cache(maxsize=64)
def _filename(key: ProfileKey) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", f"{key.host}_{key.device}".lower()).strip("-.")
    return f"{slug[:60] or 'profile'}-{_digest(key)}.json"


def _hpu_version() -> str:
    from hpu import __version__
    return __version__


def _host() -> str:
    return _platform.node() or "unknown-host"


@dataclass(frozen=True)
class _DeviceFacts:
    name: str
    platform: str
    driver_version: str
    kind: str
    compute_units: int


def _device_facts(device) -> _DeviceFacts:
    """Facts about ``device``: None (the default), a device string, a DeviceInfo or a pyopencl Device."""
    from hpu._opencl import _device as dev_mod

    if isinstance(device, dev_mod.DeviceInfo):
        return _DeviceFacts(device.name, device.platform, device.driver_version, device.kind,
                            device.compute_units)
    if device is None or isinstance(device, str):
        device = dev_mod.select_device(device)
    return _cl_device_facts(device)


@functools.lru_cache(maxsize=16)
def _cl_device_facts(device) -> _DeviceFacts:
    """A ``pyopencl.Device``'s facts, asked of the driver once (a plan needs them per call)."""
    import pyopencl as cl

    from hpu._opencl import _device as dev_mod

    t = device.type
    kind = ("GPU" if t & cl.device_type.GPU else "ACCELERATOR" if t & cl.device_type.ACCELERATOR
            else "CPU" if t & cl.device_type.CPU else cl.device_type.to_string(t))
    # a sub-device (``cpu@1``) is keyed by its own label: a profile of one partition
    # says nothing about another, or about the whole device
    return _DeviceFacts(dev_mod.device_label(device), device.platform.name.strip(),
                        device.driver_version.strip(), kind, int(device.max_compute_units))


def current_key(device=None) -> ProfileKey:
    """The key a profile for ``device`` must have on this machine now.

    ``device`` is a :class:`ProfileKey` (returned as is), a ``DeviceInfo``, a
    ``pyopencl.Device``, a device string as ``hpu devices`` accepts, or None
    for ``HPU_DEVICE``/the default device.
    """
    if isinstance(device, ProfileKey):
        return device
    facts = _device_facts(device)
    return ProfileKey(host=_host(), device=facts.name, driver_version=facts.driver_version,
                      hpu_version=_hpu_version())


# ----------------------------------------------------------------------- profile

@dataclass(frozen=True)
class Sweeps:
    """The raw measurements behind a profile, every repeat as an ``(x, seconds)`` pair.

    Kept so that the figures of 004 §6.4 can be redrawn and the estimates
    re-derived: ``g`` (x = work-items, summing two arrays of ``g_elements``
    float32), ``merge_cpu``/``merge_device`` (x = elements merged by one task),
    ``h2d``/``d2h`` (x = bytes copied host->device / device->host), ``occupancy``
    (x = subtree sorts run at once on a GPU; :func:`hpu.calibrate._solver_occupancy`;
    ``()`` for other devices and older profiles).
    """

    g_elements: int = 0
    g: Pairs = ()
    merge_cpu: Pairs = ()
    merge_device: Pairs = ()
    h2d: Pairs = ()
    d2h: Pairs = ()
    occupancy: Pairs = ()


_REQUIRED_PAIRS = ("g", "merge_cpu", "merge_device", "h2d", "d2h")
_PAIR_FIELDS = _REQUIRED_PAIRS + ("occupancy",)


@dataclass(frozen=True)
class Profile:
    """The HPU model's parameters for one host and device, as measured (or built in).

    ``p`` CPU cores Numba uses; ``g`` work-items that saturate the device;
    ``gamma`` speed of one device work-item relative to one CPU core (< 1 when
    the device core is slower; ``inv_gamma`` = 1/γ as 004 tabulates it);
    ``latency_s`` and ``seconds_per_byte`` the transfer cost λ + δ·bytes;
    ``cpu_seconds_per_element`` the CPU's one-core merge time per element,
    which turns the model's work units into seconds.
    ``device_shares_cpu`` is true when the OpenCL device runs on the same cores
    as Numba (a CPU device such as PoCL): the two then compete, not add up.
    ``source`` is ``"measured"`` or ``"builtin"`` (:meth:`builtin`).
    """

    p: int
    g: int
    gamma: float
    latency_s: float
    seconds_per_byte: float
    cpu_seconds_per_element: float
    device: str
    platform: str
    driver_version: str
    device_kind: str
    compute_units: int
    device_shares_cpu: bool
    host: str
    hpu_version: str
    created: str
    quick: bool
    source: str = "measured"
    sweeps: Sweeps = field(default_factory=Sweeps)
    schema: int = SCHEMA
    #: measured slowdown of both sides while the CPU and the device run at once
    #: (None: not measured; see :attr:`contention`)
    measured_contention: float | None = None
    #: relative standard errors of the measured numbers (``(name, error)`` pairs, e.g.
    #: ``("gamma", 0.012)``), from the spread of their repeats (issue 14); ``()`` for
    #: built-in values and profiles measured before hpu recorded them
    uncertainty: tuple[tuple[str, float], ...] = ()
    #: how the contention was obtained (:func:`hpu.calibrate.contention_estimate`: "quiet
    #: rounds", "waits removed" or "loaded rounds"); None: not measured or not recorded
    contention_basis: str | None = None
    #: the share of the machine's cores other processes used while it was calibrated
    #: (:mod:`hpu._load`); None: not recorded
    outside_load: float | None = None
    #: what a Numba parallel region and a kernel launch cost (seconds; None: not measured,
    #: :data:`hpu._overheads.DEFAULTS` stand in)
    parallel_level_s: float | None = None
    device_launch_s: float | None = None
    #: ``((bytes, seconds per unit), ...)``: one CPU core's combine (the application's merge,
    #: one task at the top of a one-task-per-side run) per unit of f-work, by the bytes the
    #: task touches; ``()``: not measured (combines cost ``cpu_seconds_per_element``)
    combine_rates: tuple[tuple[int, float], ...] = ()
    #: one device work-item's combine speed relative to one CPU core's (None: ``gamma``)
    combine_gamma: float | None = None
    #: ``((tasks, relative time), ...)``: a device level of ``tasks`` subtree sorts against
    #: one alone (a GPU's occupancy sweep; :attr:`hpu.model.Machine.device_occupancy`);
    #: ``()``: not measured (004's ``⌈tasks/g⌉``)
    device_occupancy: tuple[tuple[int, float], ...] = ()

    # -- derived --------------------------------------------------------------
    @property
    def key(self) -> ProfileKey:
        return ProfileKey(self.host, self.device, self.driver_version, self.hpu_version)

    @property
    def inv_gamma(self) -> float:
        return 1.0 / self.gamma

    def rel_error(self, name: str) -> float:
        """The relative standard error recorded for ``name`` (e.g. ``"gamma"``); 0.0 if none."""
        return dict(self.uncertainty).get(name, 0.0)

    @property
    def time_rel_error(self) -> float:
        """Relative standard error of a time the model predicts from this profile.

        Every predicted compute time scales with the CPU's seconds per unit and
        the device's part with 1/γ and the contention, the combines with their
        rates and the device's combine speed; their errors add in quadrature
        (a calibration whose large merges were slowed by other processes' memory
        traffic is uncertain, and its plans tie more often with the CPU alone).  Two plans predicted closer than about twice this cannot
        be told apart by the measurement (:func:`hpu._stats.within_noise`).
        """
        return math.sqrt(sum(self.rel_error(k) ** 2
                             for k in ("gamma", "cpu_seconds_per_element", "contention",
                                       "combine_gamma", "combine_rates")))

    def transfer_seconds(self, nbytes: float) -> float:
        """λ + δ·bytes: the modelled time of one host<->device copy."""
        return self.latency_s + self.seconds_per_byte * float(nbytes)

    def summary(self) -> dict[str, Any]:
        """The scalar fields (no raw sweeps), plus ``inv_gamma``, for reports and ``--json``."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sweeps"}
        out["uncertainty"] = dict(self.uncertainty)
        out["inv_gamma"] = self.inv_gamma
        return out

    # -- JSON -----------------------------------------------------------------
    def to_json(self) -> str:
        data = asdict(self)
        data["sweeps"] = {k: ([list(p) for p in v] if k in _PAIR_FIELDS else v)
                          for k, v in data["sweeps"].items()}
        data["uncertainty"] = dict(self.uncertainty)
        return json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Profile":
        """Parse and validate; raises :class:`ProfileError` saying which field is wrong."""
        try:
            data = _loads(text)
            return _from_dict(data)
        except _Invalid as err:
            raise ProfileError(f"invalid profile: {err}; {_FIX}") from None

    # -- built-in fallback ------------------------------------------------------
    #: How much the CPU and a device that runs on the CPU's own cores slow each other
    #: while both work (each gets about half of the cores), when not measured.
    SHARED_CORES_CONTENTION = 2.0

    @property
    def contention(self) -> float:
        """The model's contention factor: the measured one, else 2 when the device is the
        CPU's own cores and 1 otherwise."""
        if self.measured_contention is not None:
            return self.measured_contention
        return self.SHARED_CORES_CONTENTION if self.device_shares_cpu else 1.0

    def machine(self):
        """This profile as the HPU model's :class:`hpu.model.Machine`."""
        from hpu import model

        return model.Machine(p=self.p, g=self.g, gamma=self.gamma, latency_s=self.latency_s,
                             seconds_per_byte=self.seconds_per_byte,
                             seconds_per_unit=self.cpu_seconds_per_element,
                             combine_factors=self.combine_factors,
                             combine_gamma=self.combine_gamma,
                             device_occupancy=self.device_occupancy)

    @property
    def combine_factors(self) -> tuple[tuple[float, float], ...]:
        """``combine_rates`` relative to ``cpu_seconds_per_element``: the model's
        :attr:`hpu.model.Machine.combine_factors`."""
        return tuple((float(b), r / self.cpu_seconds_per_element) for b, r in self.combine_rates)

    @classmethod
    def builtin(cls, device=None) -> "Profile":
        """Conservative values for when nothing was measured (``HPU_NO_AUTOCALIBRATE=1``).

        Each errs the same way: the device looks slower and transfers dearer
        than on any real machine, so a plan made from them keeps more work on
        the CPU rather than less, and loses little if wrong.

        - ``p``: ``numba.get_num_threads()``, a fact, not a guess;
        - ``g``: 4 × compute units on a GPU/accelerator (real GPUs saturate
          only with tens of work-items per compute unit: 004 found 4096 and
          1200), 1 × compute units on a CPU device (one work-item per core);
        - ``gamma``: 1/200 on a GPU (slower than 004's 1/160 and 1/65), 1/2
          on a CPU device (a work-item there is a CPU core behind a runtime);
        - ``latency_s`` 1e-4 (100 µs; PCIe measures ~10 µs, zero-copy ~1 µs),
          ``seconds_per_byte`` 1e-9 (1 GB/s; PCIe 3 x16 gives ~12 GB/s);
        - ``cpu_seconds_per_element`` 2e-9 (a fast core's merge; a lower
          value makes computation cheap next to transfers, again towards the CPU).
        """
        import numba

        facts = _device_facts(device)
        shares = facts.kind == "CPU"
        return cls(
            p=int(numba.get_num_threads()),
            g=max(1, facts.compute_units * (1 if shares else 4)),
            gamma=0.5 if shares else 1.0 / 200.0,
            latency_s=1e-4,
            seconds_per_byte=1e-9,
            cpu_seconds_per_element=2e-9,
            device=facts.name, platform=facts.platform, driver_version=facts.driver_version,
            device_kind=facts.kind, compute_units=facts.compute_units, device_shares_cpu=shares,
            host=_host(), hpu_version=_hpu_version(), created=_now(), quick=False,
            source="builtin",
        )


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


# -------------------------------------------------------------------- validation

class _Invalid(ValueError):
    """A field of a profile file is missing or wrong (internal; becomes ProfileError)."""


def _reject_constant(name: str):
    raise _Invalid(f"the file holds {name}, which is not a valid JSON number")


def _parse_int(digits: str) -> int:
    # a profile's integers are counts that fit 64 bits; a longer literal is damage
    # (and Python refuses to convert one of more than 4300 digits with a bare ValueError)
    if len(digits.lstrip("-")) > 19:
        raise _Invalid(f"the file holds an integer of {len(digits.lstrip('-'))} digits "
                       f"({digits[:12]}...); expected one that fits 64 bits")
    return int(digits)


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)
    except json.JSONDecodeError as err:
        raise _Invalid(f"it is not valid JSON ({err})") from None
    except RecursionError:
        raise _Invalid("it nests JSON arrays or objects too deeply to be a profile") from None
    except _Invalid:
        raise
    except ValueError as err:
        raise _Invalid(f"it holds a malformed number ({err})") from None


#: Physical bounds of each measured value: a value outside them is not a
#: measurement of any machine but damage (or a hand edit gone wrong), and
#: would turn the model's arithmetic into overflow or nonsense.
_BOUNDS = {
    "p": (1, 1 << 16, "CPU threads"),
    "g": (1, 1 << 30, "work-items that saturate the device"),
    "compute_units": (1, 1 << 20, "compute units"),
    "gamma": (1e-12, 1e6, "a device work-item's speed relative to a CPU core"),
    "latency_s": (0.0, 60.0, "seconds per transfer (lambda)"),
    "seconds_per_byte": (0.0, 1.0, "seconds per byte transferred (delta)"),
    "cpu_seconds_per_element": (1e-15, 1e6, "CPU seconds per element of work"),
}
_SWEEP_BOUNDS = (1 << 62, 1e6)  # largest x of a sweep pair, largest seconds


def _check_physical(profile: Profile) -> Profile:
    """Refuse values outside the physical bounds (:data:`_BOUNDS`), naming field and range."""
    for name, (low, high, what) in _BOUNDS.items():
        v = getattr(profile, name)
        if not low <= v <= high:
            raise _Invalid(f"field {name!r} is {v!r}, outside the physical range "
                           f"[{low:g}, {high:g}] of {what}")
    if profile.sweeps.g_elements > 1 << 40:
        raise _Invalid(f"field 'sweeps.g_elements' is {profile.sweeps.g_elements}; "
                       "expected at most 2**40 elements")
    for name in _PAIR_FIELDS:
        for k, (x, sec) in enumerate(getattr(profile.sweeps, name)):
            if x > _SWEEP_BOUNDS[0] or sec > _SWEEP_BOUNDS[1]:
                raise _Invalid(f"field 'sweeps.{name}[{k}]' is {[x, sec]!r}; expected x <= 2**62 "
                               f"and seconds <= {_SWEEP_BOUNDS[1]:g}")
    return profile


def _int(data, name, minimum):
    v = data[name]
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Invalid(f"field {name!r} is {v!r}; expected an integer >= {minimum}")
    if v < minimum:
        raise _Invalid(f"field {name!r} is {v}; expected an integer >= {minimum}")
    return v


def _float(data, name, *, positive):
    v = data[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _Invalid(f"field {name!r} is {v!r}; expected a finite number")
    if (positive and v <= 0) or v < 0:
        raise _Invalid(f"field {name!r} is {v!r}; expected a number {'>' if positive else '>='} 0")
    return float(v)


def _str(data, name):
    v = data[name]
    if not isinstance(v, str) or not v.strip():
        raise _Invalid(f"field {name!r} is {v!r}; expected a non-empty string")
    return v


def _bool(data, name):
    v = data[name]
    if not isinstance(v, bool):
        raise _Invalid(f"field {name!r} is {v!r}; expected true or false")
    return v


def _pairs(data, name) -> Pairs:
    v = data[name]
    if not isinstance(v, list):
        raise _Invalid(f"field 'sweeps.{name}' is {type(v).__name__}; expected a list of [x, seconds] pairs")
    out = []
    for k, pair in enumerate(v):
        ok = (isinstance(pair, list) and len(pair) == 2
              and not isinstance(pair[0], bool) and isinstance(pair[0], int) and pair[0] >= 0
              and not isinstance(pair[1], bool) and isinstance(pair[1], (int, float))
              and math.isfinite(pair[1]) and pair[1] >= 0)
        if not ok:
            raise _Invalid(f"field 'sweeps.{name}[{k}]' is {pair!r}; expected [x >= 0 (integer), seconds >= 0]")
        out.append((int(pair[0]), float(pair[1])))
    return tuple(out)


_REQUIRED = ("schema", "p", "g", "gamma", "latency_s", "seconds_per_byte", "cpu_seconds_per_element",
             "device", "platform", "driver_version", "device_kind", "compute_units",
             "device_shares_cpu", "host", "hpu_version", "created", "quick", "source", "sweeps")


def _from_dict(data) -> Profile:
    if not isinstance(data, dict):
        raise _Invalid(f"it holds a JSON {type(data).__name__}; expected an object")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise _Invalid(f"field(s) {', '.join(map(repr, missing))} missing")
    schema = _int(data, "schema", 1)
    if schema != SCHEMA:
        raise _Invalid(f"field 'schema' is {schema}; this hpu reads schema {SCHEMA}")
    source = _str(data, "source")
    if source not in ("measured", "builtin"):
        raise _Invalid(f"field 'source' is {source!r}; expected 'measured' or 'builtin'")
    created = _str(data, "created")
    try:
        _dt.datetime.fromisoformat(created)
    except ValueError:
        raise _Invalid(f"field 'created' is {created!r}; expected an ISO 8601 time") from None
    sw = data["sweeps"]
    if not isinstance(sw, dict):
        raise _Invalid(f"field 'sweeps' is {sw!r}; expected an object")
    sw_missing = [k for k in ("g_elements",) + _REQUIRED_PAIRS if k not in sw]
    if sw_missing:
        raise _Invalid(f"field(s) {', '.join('sweeps.' + k for k in sw_missing)} missing")
    sweeps = Sweeps(g_elements=_int(sw, "g_elements", 0),
                    **{k: _pairs(sw, k) for k in _PAIR_FIELDS if k in sw})
    return _check_physical(Profile(
        p=_int(data, "p", 1),
        g=_int(data, "g", 1),
        gamma=_float(data, "gamma", positive=True),
        latency_s=_float(data, "latency_s", positive=False),
        seconds_per_byte=_float(data, "seconds_per_byte", positive=False),
        cpu_seconds_per_element=_float(data, "cpu_seconds_per_element", positive=True),
        device=_str(data, "device"),
        platform=_str(data, "platform"),
        driver_version=_str(data, "driver_version"),
        device_kind=_str(data, "device_kind"),
        compute_units=_int(data, "compute_units", 1),
        device_shares_cpu=_bool(data, "device_shares_cpu"),
        host=_str(data, "host"),
        hpu_version=_str(data, "hpu_version"),
        created=created,
        quick=_bool(data, "quick"),
        source=source,
        sweeps=sweeps,
        schema=schema,
        measured_contention=_optional_contention(data),
        uncertainty=_optional_uncertainty(data),
        contention_basis=_optional_basis(data),
        outside_load=_optional_share(data, "outside_load"),
        parallel_level_s=_optional_seconds(data, "parallel_level_s"),
        device_launch_s=_optional_seconds(data, "device_launch_s"),
        combine_rates=_optional_rates(data),
        combine_gamma=_optional_positive(data, "combine_gamma"),
        device_occupancy=_optional_occupancy(data),
    ))


def _optional_count_pairs(data, name: str, ok, shape: str, what: str, one: str):
    """The optional list ``data[name]`` of ``[count >= 1, number]`` pairs whose number ``ok``
    accepts, sorted, one pair per count (``shape``, ``what``, ``one``: the messages' words)."""
    value = data.get(name, [])
    if not isinstance(value, list):
        raise _Invalid(f"field {name!r} is {value!r}; expected a list of {shape}")
    out = []
    for item in value:
        good = (isinstance(item, list) and len(item) == 2
                and isinstance(item[0], int) and not isinstance(item[0], bool) and item[0] >= 1
                and isinstance(item[1], (int, float)) and not isinstance(item[1], bool)
                and math.isfinite(item[1]) and ok(item[1]))
        if not good:
            raise _Invalid(f"field {name!r} has {item!r}; expected {what}")
        out.append((item[0], float(item[1])))
    if len({k for k, _ in out}) != len(out):
        raise _Invalid(f"field {name!r} names {one} twice: {value!r}")
    return tuple(sorted(out))


def _optional_occupancy(data) -> tuple[tuple[int, float], ...]:
    return _optional_count_pairs(data, "device_occupancy", lambda r: 0 < r <= 1e9,
                                 "[tasks, relative time]", "[tasks >= 1, relative time > 0]",
                                 "a task count")


def _optional_rates(data) -> tuple[tuple[int, float], ...]:
    return _optional_count_pairs(data, "combine_rates", lambda r: 0 < r < 1,
                                 "[bytes, seconds]",
                                 "[bytes >= 1, seconds per unit in (0, 1)]", "a size")


def _optional_positive(data, name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise _Invalid(f"field {name!r} is {value!r}; expected a number > 0 or null")
    return float(value)


def _optional_uncertainty(data) -> tuple[tuple[str, float], ...]:
    value = data.get("uncertainty", {})
    if not isinstance(value, dict):
        raise _Invalid(f"field 'uncertainty' is {value!r}; expected an object of relative errors")
    out = []
    for name, err in value.items():
        if (isinstance(err, bool) or not isinstance(err, (int, float)) or not math.isfinite(err)
                or err < 0):
            raise _Invalid(f"field 'uncertainty.{name}' is {err!r}; expected a relative error >= 0")
        out.append((str(name), float(err)))
    return tuple(sorted(out))


#: The values ``contention_basis`` may take (:func:`hpu.calibrate.contention_estimate`).
CONTENTION_BASES = ("quiet rounds", "waits removed", "loaded rounds")


def _optional_basis(data) -> str | None:
    value = data.get("contention_basis")
    if value is None:
        return None
    if value not in CONTENTION_BASES:
        raise _Invalid(f"field 'contention_basis' is {value!r}; expected one of "
                       f"{', '.join(map(repr, CONTENTION_BASES))} or null")
    return value


def _optional_share(data, name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise _Invalid(f"field {name!r} is {value!r}; expected a share in [0, 1] or null")
    return float(value)


def _optional_seconds(data, name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise _Invalid(f"field {name!r} is {value!r}; expected seconds in [0, 1] or null")
    return float(value)


def _optional_contention(data) -> float | None:
    value = data.get("measured_contention")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1.0 <= value <= 16.0:
        raise _Invalid(f"field 'measured_contention' is {value!r}; expected a number in [1, 16] "
                       "or null")
    return float(value)


# ----------------------------------------------------------------------- storage

def profiles_dir() -> Path:
    """``platformdirs.user_config_dir("hpu")/profiles`` (not created here)."""
    return _profiles_dir(os.environ.get("XDG_CONFIG_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=16)
def _profiles_dir(xdg_config_home, home) -> Path:
    """Once per environment (what the folder depends on), not on every call's plan."""
    import platformdirs

    return Path(platformdirs.user_config_dir("hpu")) / "profiles"


def _env_path() -> Path | None:
    raw = os.environ.get(ENV_PROFILE, "").strip()
    return Path(raw).expanduser() if raw else None


def profile_path(device=None) -> Path:
    """Where the profile for ``device`` is read and written: ``HPU_PROFILE`` if set, else the config folder."""
    env = _env_path()
    if env is not None:
        return env
    return profiles_dir() / current_key(device).filename


def _fix_for(path: Path) -> str:
    if _env_path() is not None:
        return (f"run `hpu calibrate` to measure a new one (it writes {ENV_PROFILE}={path}), "
                f"or unset {ENV_PROFILE}")
    return _FIX


def read_profile(path) -> Profile:
    """Read and validate the profile file at ``path`` (no staleness check).

    Raises :class:`ProfileError` with the path and the fix when the file cannot
    be read or is corrupt; ``FileNotFoundError`` when there is no file.
    """
    path = Path(path)
    # A run plans on every call: the file is parsed and validated again only when it
    # changed (modification time, size or inode), not each time (issue 13).
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except FileNotFoundError:
        _read_cache.pop(str(path), None)
        raise
    except OSError as err:
        raise ProfileError(f"profile {path} cannot be read ({err}); {_fix_for(path)}") from None
    hit = _read_cache.get(str(path))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as err:
        raise ProfileError(f"profile {path} cannot be read ({err}); {_fix_for(path)}") from None
    try:
        profile = _from_dict(_loads(text))
    except _Invalid as err:
        raise ProfileError(f"profile {path} is corrupt: {err}; {_fix_for(path)}") from None
    _read_cache[str(path)] = (stamp, profile)
    return profile


#: path -> ((mtime_ns, size, inode), Profile) of the last valid read
_read_cache: dict[str, tuple[tuple[int, int, int], Profile]] = {}


def _check_current(profile: Profile, key: ProfileKey, path: Path) -> None:
    diffs = [f"{name} {getattr(profile.key, name)!r} (now {getattr(key, name)!r})"
             for name in ("host", "device", "driver_version", "hpu_version")
             if getattr(profile.key, name) != getattr(key, name)]
    if diffs:
        raise ProfileError(f"profile {path} is stale: it was measured for {', '.join(diffs)}; "
                           f"{_fix_for(path)}")


def load_profile(device=None, *, path=None) -> Profile | None:
    """The stored profile for ``device``, checked; ``None`` when there is none.

    ``device`` as for :func:`current_key`.  The file is ``path`` if given,
    else :func:`profile_path`.  Raises :class:`ProfileError` (with the path and
    ``hpu calibrate`` as the fix) when the file is corrupt or stale; a missing
    file is the only case that returns ``None``.
    """
    key = current_key(device)
    path = Path(path) if path is not None else (_env_path() or profiles_dir() / key.filename)
    try:
        profile = read_profile(path)
    except FileNotFoundError:
        return None
    _check_current(profile, key, path)
    return profile


def save_profile(profile: Profile, path=None) -> Path:
    """Write ``profile`` atomically to ``path`` (default: ``HPU_PROFILE`` or the config folder)."""
    if not isinstance(profile, Profile):
        raise TypeError(f"save_profile expects a Profile, got {type(profile).__name__}")
    if path is None:
        path = _env_path() or profiles_dir() / profile.key.filename
    path = Path(path)
    text = profile.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)            # mkstemp makes it private; a profile is not secret
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as err:
        raise ProfileError(f"cannot write profile {path} ({err}); set {ENV_PROFILE} to a writable "
                           "file or fix the folder's permissions") from None
    return path


# ------------------------------------------------------------------ active profile

#: Quick calibrations made in this process whose profile could not be saved,
#: so that a read-only config folder does not cost a calibration per call.
_unsaved: dict[ProfileKey, Profile] = {}

#: Rough duration of ``calibrate(quick=True)``, for the notice.
QUICK_SECONDS = 20


def autocalibrate_disabled() -> bool:
    """True when ``HPU_NO_AUTOCALIBRATE`` is set to something other than ``0``/``false``/``no``/``off``."""
    raw = os.environ.get(ENV_NO_AUTOCALIBRATE, "").strip().lower()
    return raw not in ("", "0", "false", "no", "off")


#: ``(calibrate, full_seconds)``, registered by :mod:`hpu.calibrate` when it is imported: this
#: module stays below the calibration (which imports it) instead of importing it back.
_calibrator: tuple[Any, int] | None = None


def set_calibrator(calibrate, full_seconds: int) -> None:
    """Register the function :func:`active_profile` calibrates with (``hpu.calibrate`` does)."""
    global _calibrator
    _calibrator = (calibrate, full_seconds)


_calibrating = 0


@contextlib.contextmanager
def calibrating():
    """While a calibration measures (:func:`hpu.calibrate.calibrate`), the plans of the
    runs it times use :meth:`Profile.builtin`: the stored profile is the one being replaced,
    and a corrupt or stale one -- which every other call refuses, telling the user to run
    ``hpu calibrate`` -- must not stop its own replacement."""
    global _calibrating
    _calibrating += 1
    try:
        yield
    finally:
        _calibrating -= 1


def active_profile(device=None, *, autocalibrate: bool = True, quick: bool = True) -> Profile:
    """The profile the planner should use for ``device`` (None, a device string,
    a ``DeviceInfo`` or a ``pyopencl.Device``).

    1. The stored profile (:func:`load_profile`); a corrupt or stale one raises
       :class:`ProfileError`, it is not replaced (see the module docstring).
    2. None stored, ``autocalibrate`` true, ``HPU_NO_AUTOCALIBRATE`` unset and
       :mod:`hpu.calibrate` imported (``hpu.active_profile`` and the planner
       import it; it registers itself with :func:`set_calibrator`): calibrate once
       (quickly unless ``quick=False``), save, and say so in one
       line on stderr.  If the calibration itself fails (a device that cannot
       compile kernels), warn on stderr and fall back to step 3.
    3. Otherwise :meth:`Profile.builtin`, conservative values (``source="builtin"``).
    """
    if _calibrating:
        return Profile.builtin(device)
    key = current_key(device)
    stored = load_profile(key)
    if stored is not None:
        return stored
    if key in _unsaved:
        return _unsaved[key]
    if not autocalibrate or autocalibrate_disabled() or _calibrator is None:
        return Profile.builtin(device)
    calibrate, full_seconds = _calibrator
    seconds = QUICK_SECONDS if quick else full_seconds
    print(f"hpu: no profile for {key.device}; calibrating {'quickly ' if quick else ''}once "
          f"(~{seconds} s, longer while a new machine compiles); run `hpu calibrate` for a "
          "full one", file=sys.stderr)
    try:
        profile = calibrate(device, quick=quick, progress=False)
    except HpuError as err:
        print(f"hpu: calibration failed ({err}); using built-in values "
              f"(set {ENV_NO_AUTOCALIBRATE}=1 to skip the attempt)", file=sys.stderr)
        builtin = Profile.builtin(device)
        _unsaved[key] = builtin
        return builtin
    try:
        save_profile(profile)
    except ProfileError as err:
        print(f"hpu: {err}; keeping the measurement for this process only", file=sys.stderr)
        _unsaved[key] = profile
    return profile
