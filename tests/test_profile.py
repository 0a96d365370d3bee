"""Profiles: JSON round trip, where they live, and refusing corrupt or stale ones.

Every file is under tmp_path: the autouse fixture points the config folder
there and clears HPU_PROFILE / HPU_NO_AUTOCALIBRATE, so the real user config
is never read or written.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpu
from hpu import _profile
from hpu._errors import KernelBuildError, ProfileError
from hpu._profile import Profile, ProfileKey, Sweeps


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(_profile, "profiles_dir", lambda: tmp_path / "config" / "profiles")
    monkeypatch.delenv("HPU_PROFILE", raising=False)
    monkeypatch.delenv("HPU_NO_AUTOCALIBRATE", raising=False)
    monkeypatch.delenv("HPU_DEVICE", raising=False)
    monkeypatch.setattr(_profile, "_unsaved", {})
    return tmp_path


KEY = ProfileKey(host="node-a", device="Test Device", driver_version="1.2", hpu_version=hpu.__version__)


def make_profile(key: ProfileKey = KEY, **changes) -> Profile:
    base = Profile(
        p=4, g=4096, gamma=1 / 160, latency_s=1.5e-5, seconds_per_byte=8e-11,
        cpu_seconds_per_element=3e-9, device=key.device, platform="Test Platform",
        driver_version=key.driver_version, device_kind="GPU", compute_units=20,
        device_shares_cpu=False, host=key.host, hpu_version=key.hpu_version,
        created="2026-01-02T03:04:05+00:00", quick=False,
        sweeps=Sweeps(g_elements=1 << 22, g=((1, 0.5), (2, 0.25), (2, 0.26)),
                      merge_cpu=((4096, 1e-5),), merge_device=((4096, 1.6e-3),),
                      h2d=((1024, 1.6e-5), (2048, 1.7e-5)), d2h=((1024, 1.7e-5),)),
    )
    return dataclasses.replace(base, **changes)


def default_path(key: ProfileKey = KEY) -> Path:
    return _profile.profiles_dir() / key.filename


# ------------------------------------------------------------------- round trip

def test_round_trip_through_json_is_exact():
    prof = make_profile()
    back = Profile.from_json(prof.to_json())
    assert back == prof
    data = json.loads(prof.to_json())
    assert data["schema"] == _profile.SCHEMA
    assert data["sweeps"]["g"] == [[1, 0.5], [2, 0.25], [2, 0.26]]


finite = st.floats(min_value=1e-12, max_value=1e6, allow_nan=False, allow_infinity=False)
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20).filter(str.strip)
pairs = st.lists(st.tuples(st.integers(0, 1 << 30), st.floats(0, 10, allow_nan=False)), max_size=5).map(tuple)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(p=st.integers(1, 512), g=st.integers(1, 1 << 20), gamma=finite, lat=st.floats(0, 1), spb=st.floats(0, 1),
       cpe=finite, names=st.tuples(text, text, text, text), shares=st.booleans(), quick=st.booleans(),
       g_sweep=pairs, h2d=pairs)
def test_round_trip_of_any_valid_profile(tmp_path, p, g, gamma, lat, spb, cpe, names, shares, quick, g_sweep, h2d):
    key = ProfileKey(host=names[0], device=names[1], driver_version=names[2], hpu_version=hpu.__version__)
    prof = make_profile(key, p=p, g=g, gamma=gamma, latency_s=lat, seconds_per_byte=spb,
                        cpu_seconds_per_element=cpe, platform=names[3], device_shares_cpu=shares,
                        quick=quick, sweeps=Sweeps(g_elements=7, g=g_sweep, h2d=h2d))
    path = _profile.save_profile(prof, tmp_path / "rt" / key.filename)
    assert _profile.read_profile(path) == prof
    assert _profile.load_profile(key, path=path) == prof


def test_derived_values():
    prof = make_profile()
    assert prof.inv_gamma == pytest.approx(160)
    assert prof.transfer_seconds(1 << 20) == pytest.approx(1.5e-5 + 8e-11 * (1 << 20))
    assert prof.key == KEY
    summary = prof.summary()
    assert "sweeps" not in summary and summary["inv_gamma"] == pytest.approx(160)


# -------------------------------------------------------------------- file names

def test_filename_is_safe_readable_and_unique_per_key():
    weird = ProfileKey(host="my host/..", device="GeForce RTX (tm) 4090!", driver_version="5 5", hpu_version="0.1.0")
    name = weird.filename
    assert name.endswith(".json") and "/" not in name and " " not in name
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789._-")
    assert "geforce-rtx" in name
    others = {dataclasses.replace(weird, **{f: "x"}).filename for f in ("host", "device", "driver_version", "hpu_version")}
    assert len(others | {name}) == 5


# --------------------------------------------------------------- save and load

def test_save_writes_atomically_into_the_config_folder():
    prof = make_profile()
    path = _profile.save_profile(prof)
    assert path == default_path()
    assert [p.name for p in path.parent.iterdir()] == [path.name]      # no temporary left over
    assert _profile.load_profile(KEY) == prof
    newer = make_profile(g=2048)
    _profile.save_profile(newer)
    assert _profile.load_profile(KEY).g == 2048
    assert len(list(path.parent.iterdir())) == 1


def test_missing_profile_is_none_not_an_error():
    assert _profile.load_profile(KEY) is None


def test_unwritable_location_is_a_profile_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ProfileError, match="cannot write profile .*a-file.*HPU_PROFILE"):
        _profile.save_profile(make_profile(), blocker / "p.json")


def test_hpu_profile_is_honoured_for_reading_and_writing(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere" / "mine.json"
    monkeypatch.setenv("HPU_PROFILE", str(target))
    assert _profile.profile_path(KEY) == target
    path = _profile.save_profile(make_profile())
    assert path == target and target.exists()
    assert not default_path().exists()
    assert _profile.load_profile(KEY) == make_profile()


# -------------------------------------------------------------------- corrupt

def corrupt(data: dict, field: str, value):
    data = json.loads(json.dumps(data))
    if value is KeyError:
        data.pop(field)
    else:
        data[field] = value
    return json.dumps(data)


GOOD = json.loads(make_profile().to_json())


@pytest.mark.parametrize("content, reason", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON list; expected an object"),
    (corrupt(GOOD, "g", KeyError), "'g'.* missing"),
    (corrupt(GOOD, "p", "4"), "'p' is '4'; expected an integer"),
    (corrupt(GOOD, "p", True), "'p' is True; expected an integer"),
    (corrupt(GOOD, "g", -4096), "'g' is -4096; expected an integer >= 1"),
    (corrupt(GOOD, "g", 0), "'g' is 0"),
    (corrupt(GOOD, "gamma", 0.0), "'gamma' is 0.0; expected a number > 0"),
    (corrupt(GOOD, "gamma", "fast"), "'gamma' is 'fast'; expected a finite number"),
    (corrupt(GOOD, "latency_s", -1e-6), "'latency_s' is -1e-06; expected a number >= 0"),
    (corrupt(GOOD, "device_shares_cpu", "yes"), "'device_shares_cpu' is 'yes'; expected true or false"),
    (corrupt(GOOD, "device", ""), "'device' is ''; expected a non-empty string"),
    (corrupt(GOOD, "created", "yesterday"), "'created' is 'yesterday'; expected an ISO 8601 time"),
    (corrupt(GOOD, "source", "guessed"), "'source' is 'guessed'"),
    (corrupt(GOOD, "schema", 99), "'schema' is 99; this hpu reads schema 2"),
    (corrupt(GOOD, "sweeps", {"g_elements": 1}), "sweeps.g.* missing"),
    (corrupt(GOOD, "sweeps", dict(GOOD["sweeps"], g=[[1, -0.5]])), r"sweeps.g\[0\]' is \[1, -0.5\]"),
    (json.dumps(GOOD).replace('"p": 4', '"p": NaN'), "NaN"),
])
def test_corrupt_profiles_are_refused_with_path_and_fix(content, reason):
    path = default_path()
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(ProfileError) as err:
        _profile.load_profile(KEY)
    msg = str(err.value)
    assert f"profile {path} is corrupt" in msg
    assert "hpu calibrate" in msg
    assert re.search(reason, msg), msg


def test_from_json_refuses_without_a_path():
    with pytest.raises(ProfileError, match="invalid profile: .*'g' is -1.*hpu calibrate"):
        Profile.from_json(corrupt(GOOD, "g", -1))


def test_unreadable_file_is_a_profile_error(tmp_path):
    path = default_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ProfileError, match=f"profile {path} cannot be read.*hpu calibrate"):
        _profile.load_profile(KEY)


# ---------------------------------------------------------------------- stale

@pytest.mark.parametrize("field, value", [
    ("hpu_version", "0.0.1"),
    ("device", "Another Device"),
    ("driver_version", "9.9"),
    ("host", "node-b"),
])
def test_stale_profiles_are_refused_with_path_and_fix(field, value):
    stored = make_profile(dataclasses.replace(KEY, **{field: value}))
    path = _profile.save_profile(stored, default_path())      # where KEY's profile belongs
    with pytest.raises(ProfileError) as err:
        _profile.load_profile(KEY)
    msg = str(err.value)
    assert f"profile {path} is stale" in msg and "hpu calibrate" in msg
    assert f"{field} {value!r} (now {getattr(KEY, field)!r})" in msg


def test_stale_message_under_hpu_profile_names_the_variable(tmp_path, monkeypatch):
    target = tmp_path / "shared.json"
    monkeypatch.setenv("HPU_PROFILE", str(target))
    _profile.save_profile(make_profile(dataclasses.replace(KEY, host="node-b")))
    with pytest.raises(ProfileError, match=f"stale.*writes HPU_PROFILE={target}.*unset HPU_PROFILE"):
        _profile.load_profile(KEY)


def test_current_key_describes_this_host_and_device():
    from hpu._opencl._device import devices

    try:
        devs = devices()
    except hpu.DeviceUnavailableError as err:
        pytest.skip(f"no OpenCL: {err}")
    if not devs:
        pytest.skip("no OpenCL device")
    import platform
    key = _profile.current_key(devs[0])
    assert key == ProfileKey(platform.node(), devs[0].name, devs[0].driver_version, hpu.__version__)
    assert _profile.current_key(None) == key                  # the default device
    assert _profile.current_key(key) is key


# ------------------------------------------------------------- active profile

def test_no_autocalibrate_gives_the_builtin_values(monkeypatch):
    from hpu._opencl._device import devices

    devs = devices()
    if not devs:
        pytest.skip("no OpenCL device")
    monkeypatch.setenv("HPU_NO_AUTOCALIBRATE", "1")
    calls = []
    import hpu.calibrate as cal
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: calls.append(1))
    prof = _profile.active_profile()
    assert calls == []
    import numba
    d = devs[0]
    shares = d.kind == "CPU"
    assert prof.source == "builtin"
    assert prof.p == numba.get_num_threads()
    assert prof.g == d.compute_units * (1 if shares else 4)
    assert prof.gamma == (0.5 if shares else 1 / 200)
    assert (prof.latency_s, prof.seconds_per_byte, prof.cpu_seconds_per_element) == (1e-4, 1e-9, 2e-9)
    assert prof.device == d.name and prof.device_shares_cpu == shares
    folder = _profile.profiles_dir()
    assert not folder.exists() or not any(folder.iterdir())     # nothing saved
    assert Profile.from_json(prof.to_json()) == prof          # a valid profile in every respect


@pytest.mark.parametrize("value, disabled", [("1", True), ("yes", True), ("0", False), ("", False), ("off", False)])
def test_autocalibrate_switch_values(monkeypatch, value, disabled):
    monkeypatch.setenv("HPU_NO_AUTOCALIBRATE", value)
    assert _profile.autocalibrate_disabled() is disabled


def _device_or_skip():
    from hpu._opencl._device import devices
    devs = devices()
    if not devs:
        pytest.skip("no OpenCL device")
    return devs[0]


def test_autocalibration_runs_once_saves_and_says_so(monkeypatch, capsys):
    dev = _device_or_skip()
    key = _profile.current_key(dev)
    import hpu.calibrate as cal

    calls = []

    def fake_calibrate(device=None, quick=False, progress=None, **kw):
        calls.append((device, quick, progress))
        return make_profile(key, source="measured", quick=quick)

    monkeypatch.setattr(cal, "calibrate", fake_calibrate)
    first = _profile.active_profile(dev)
    err = capsys.readouterr().err
    assert calls == [(dev, True, False)]
    assert f"no profile for {dev.name}; calibrating quickly once" in err
    assert "run `hpu calibrate` for a full one" in err and len(err.strip().splitlines()) == 1
    assert default_path(key).exists()
    second = _profile.active_profile(dev)
    assert len(calls) == 1 and second == first
    assert capsys.readouterr().err == ""


def test_autocalibration_keeps_an_unsaveable_result_for_the_process(monkeypatch, capsys):
    dev = _device_or_skip()
    key = _profile.current_key(dev)
    import hpu.calibrate as cal
    calls = []
    monkeypatch.setattr(cal, "calibrate", lambda device=None, **k: calls.append(1) or make_profile(key))

    def read_only(profile, path=None):
        raise ProfileError("cannot write profile /read-only/p.json (read-only file system)")

    monkeypatch.setattr(_profile, "save_profile", read_only)
    a = _profile.active_profile(dev)
    b = _profile.active_profile(dev)
    assert a == b and calls == [1]
    assert "cannot write profile" in capsys.readouterr().err


def test_failed_autocalibration_falls_back_to_builtin_once(monkeypatch, capsys):
    dev = _device_or_skip()
    import hpu.calibrate as cal
    calls = []

    def broken(device=None, **k):
        calls.append(1)
        raise KernelBuildError("the device could not compile")

    monkeypatch.setattr(cal, "calibrate", broken)
    prof = _profile.active_profile(dev)
    assert prof.source == "builtin" and calls == [1]
    assert "calibration failed (the device could not compile); using built-in values" in capsys.readouterr().err
    assert _profile.active_profile(dev).source == "builtin" and calls == [1]


def _bad_profile(kind):
    """This device and the path of its stored profile, made ``corrupt`` or ``stale``."""
    dev = _device_or_skip()
    key = _profile.current_key(dev)
    path = default_path(key)
    if kind == "corrupt":
        path.parent.mkdir(parents=True)
        path.write_text('{"p": 4')
    else:
        _profile.save_profile(make_profile(dataclasses.replace(key, hpu_version="0.0.1")), path)
    return dev, path


@pytest.mark.parametrize("kind", ["corrupt", "stale"])
def test_active_profile_never_replaces_a_bad_profile(monkeypatch, kind):
    dev, path = _bad_profile(kind)
    before = path.read_bytes()
    import hpu.calibrate as cal
    monkeypatch.setattr(cal, "calibrate", lambda *a, **k: pytest.fail("must not calibrate"))
    with pytest.raises(ProfileError, match=f"profile {path} is {kind}.*hpu calibrate"):
        _profile.active_profile(dev)
    monkeypatch.setenv("HPU_NO_AUTOCALIBRATE", "1")
    with pytest.raises(ProfileError, match=kind):
        _profile.active_profile(dev)
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", ["corrupt", "stale"])
def test_a_calibration_plans_its_runs_without_the_profile_it_replaces(kind):
    """`hpu calibrate`, the fix every refusal of a bad profile names, itself failed on the
    bad profile: a run it times planned from the stored one.  While calibrating, the plans
    use the built-in values, and the bad profile is refused again afterwards (until the
    calibration saves a new one)."""
    from hpu import _plan

    dev, path = _bad_profile(kind)
    with _profile.calibrating():
        assert _profile.active_profile(dev).source == "builtin"
        _plan._profile_machine(dev, autocalibrate=False)     # the planner's own reading
    with pytest.raises(ProfileError, match=kind):
        _profile.active_profile(dev)


# ------------------------------------------------------- physical bounds, malformed numbers

@pytest.mark.parametrize("field, value", [
    ("gamma", 1e300), ("gamma", 1e-300), ("g", 1 << 40), ("p", 10 ** 9),
    ("latency_s", 1e9), ("seconds_per_byte", 5.0), ("cpu_seconds_per_element", 1e-300),
    ("compute_units", 1 << 40),
])
def test_values_outside_physical_bounds_are_refused(field, value):
    path = default_path()
    path.parent.mkdir(parents=True)
    path.write_text(corrupt(GOOD, field, value))
    with pytest.raises(ProfileError) as err:
        _profile.load_profile(KEY)
    msg = str(err.value)
    assert f"profile {path} is corrupt" in msg and "hpu calibrate" in msg
    assert re.search(rf"'{field}' is .*outside the physical range", msg), msg


def test_a_sweep_with_absurd_seconds_is_refused():
    path = default_path()
    path.parent.mkdir(parents=True)
    path.write_text(corrupt(GOOD, "sweeps", dict(GOOD["sweeps"], h2d=[[1, 1e300]])))
    with pytest.raises(ProfileError, match=r"sweeps.h2d\[0\].*seconds <="):
        _profile.load_profile(KEY)


@pytest.mark.parametrize("make, reason", [
    (lambda t: t.replace('"p": 4', '"p": ' + "9" * 5000), "integer of 5000 digits"),
    (lambda t: t.replace('"p": 4', '"p": -' + "1" * 30), "integer of 30 digits"),
    (lambda t: t.replace('"quick": false', '"quick": ' + "[" * 100_000 + "]" * 100_000),
     "nests JSON .* too deeply"),
    (lambda t: "[" * 1_000_000, "too deeply|not valid JSON"),
    (lambda t: t.replace('"gamma": 0.00625', '"gamma": 1' + "0" * 400 + ".0"),
     "'gamma' is inf; expected a finite number"),
])
def test_malformed_numbers_and_nesting_are_profile_errors(make, reason):
    path = default_path()
    path.parent.mkdir(parents=True)
    text = json.dumps(GOOD)
    assert '"gamma": 0.00625' in text and '"quick": false' in text
    path.write_text(make(text))
    with pytest.raises(ProfileError) as err:
        _profile.load_profile(KEY)
    msg = str(err.value)
    assert f"profile {path} is corrupt" in msg and "hpu calibrate" in msg
    assert re.search(reason, msg), msg[:300]


def test_a_profile_without_an_occupancy_table_reads_as_004s_device():
    """Profiles written before the occupancy sweep (and every CPU device's) have neither
    ``device_occupancy`` nor ``sweeps.occupancy``: they read, and the model's device
    level is ``ceil(tasks / g)``."""
    prof = _profile.Profile.builtin()
    data = json.loads(prof.to_json())
    del data["device_occupancy"]
    del data["sweeps"]["occupancy"]
    back = _profile.Profile.from_json(json.dumps(data))
    assert back.device_occupancy == () and back.sweeps.occupancy == ()
    assert back.machine().device_rounds(3 * back.g) == 3.0


@pytest.mark.parametrize("bad", [[[0, 1.0]], [[1, -1.0]], [[1, 1.0], [1, 2.0]], "x",
                                 [[1.5, 1.0]]])
def test_a_profile_with_a_bad_occupancy_table_is_corrupt(bad):
    data = json.loads(_profile.Profile.builtin().to_json())
    data["device_occupancy"] = bad
    with pytest.raises(_profile.ProfileError, match="device_occupancy"):
        _profile.Profile.from_json(json.dumps(data))
