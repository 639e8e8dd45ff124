"""`pip install ./python` as a user runs it: offline, with pip's build
isolation (the backend needs nothing from a package index), a wheel whose
RECORD matches its files, and an importable package of the right version."""
import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(PYTHON_DIR, "_build"))
import trainwatch_build  # noqa: E402


def has_pip():
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0


class BuildBackend(unittest.TestCase):
    def test_the_wheel_holds_every_module_and_a_matching_record(self):
        with tempfile.TemporaryDirectory() as out:
            name = trainwatch_build.build_wheel(out)
            version = trainwatch_build._version()
            self.assertEqual(name, "trainwatch-%s-py3-none-any.whl" % version)
            with zipfile.ZipFile(os.path.join(out, name)) as z:
                names = set(z.namelist())
                modules = {n for n in names if n.startswith("trainwatch/")}
                on_disk = {"trainwatch/" + f for f in os.listdir(os.path.join(PYTHON_DIR, "trainwatch"))
                           if f.endswith(".py")}
                self.assertEqual(modules, on_disk)
                record = z.read("trainwatch-%s.dist-info/RECORD" % version).decode().splitlines()
                self.assertEqual(len(record), len(names))
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if path.endswith("/RECORD"):
                        self.assertEqual((digest, size), ("", ""))
                        continue
                    data = z.read(path)
                    want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, int(size)), ("sha256=" + want, len(data)), path)
                metadata = z.read("trainwatch-%s.dist-info/METADATA" % version).decode()
                self.assertIn("Version: %s\n" % version, metadata)
                self.assertIn('Requires-Dist: torch; extra == "torch"', metadata)

    @unittest.skipUnless(has_pip(), "no pip for %s" % sys.executable)
    def test_pip_installs_it_offline_with_build_isolation(self):
        with tempfile.TemporaryDirectory() as target:
            r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--quiet",
                                "--target", target, PYTHON_DIR], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([sys.executable, "-c", "import trainwatch, trainwatch.trial; print(trainwatch.__file__, trainwatch.__version__)"],
                               capture_output=True, text=True, cwd=target, env=dict(os.environ, PYTHONPATH=target))
            self.assertEqual(r.returncode, 0, r.stderr)
            path, version = r.stdout.split()
            self.assertTrue(path.startswith(target), path)
            self.assertEqual(version, trainwatch_build._version())


if __name__ == "__main__":
    unittest.main()
