"""The Python client's build backend (PEP 517 and PEP 660), standard library only.

pip installs a package's build requirements into an isolated environment
before building it, from the package index; with setuptools as the backend,
`pip install ./python` failed on a machine without an index. This backend
needs nothing (pyproject.toml: requires = []), so the install works offline,
and the client stays what it is: plain modules, no compiled parts.

It builds a pure-Python wheel of the trainwatch package (and the metadata
below; the version is trainwatch.__version__), an sdist, and an editable
install (a .pth file pointing at this folder).
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "trainwatch"
SUMMARY = "trainwatch's Python client: a training job's metrics and tensor statistics, and reading them back"
REQUIRES_PYTHON = ">=3.8"
EXTRAS = {"torch": ["torch"], "pandas": ["pandas"]}
TAG = "py3-none-any"


def _version():
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("trainwatch/__init__.py has no __version__ = \"...\" line")
    return m.group(1)


def _metadata():
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + _version(),
             "Summary: " + SUMMARY, "Requires-Python: " + REQUIRES_PYTHON]
    for extra, reqs in EXTRAS.items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs]
    return "\n".join(lines) + "\n"


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: trainwatch_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _package_files():
    """(path in the wheel, path on disk) of every module, sorted."""
    out = []
    for folder, dirs, files in os.walk(os.path.join(ROOT, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                disk = os.path.join(folder, name)
                out.append((os.path.relpath(disk, ROOT).replace(os.sep, "/"), disk))
    return out


def _write_wheel(wheel_directory, entries):
    """entries: (name, bytes). Adds the dist-info files and RECORD."""
    dist_info = _dist_info()
    entries = list(entries) + [(dist_info + "/METADATA", _metadata().encode()),
                               (dist_info + "/WHEEL", _wheel_file().encode())]
    record = io.StringIO()
    for name, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (name, digest, len(data)))
    record.write(dist_info + "/RECORD,,\n")
    wheel_name = "%s-%s-%s.whl" % (NAME, _version(), TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
        z.writestr(dist_info + "/RECORD", record.getvalue())
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    path = os.path.join(metadata_directory, _dist_info())
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(path, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for name, disk in _package_files():
        with open(disk, "rb") as f:
            entries.append((name, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth line puts this folder on sys.path: edits show without reinstalling.
    return _write_wheel(wheel_directory, [("%s.pth" % NAME, (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel in ["pyproject.toml", "_build/trainwatch_build.py"] + [p for p, _ in _package_files()]:
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
