"""The fixtures in tests/testdata are the bytes their README describes: every file listed in
SHA256SUMS has that digest, and no other fixture is there (the README, SHA256SUMS and the
generator's scripts aside); the generator's decoder (promjson.py) gives exactly the committed
.json of every Prometheus body, so new captures made with make.sh are decoded the same way."""

import hashlib
import subprocess
import sys

import pytest

from conftest import REPO, TESTDATA

HERE = REPO / "tests" / "testdata"
NOT_FIXTURES = {"README.md", "SHA256SUMS", "make.sh", "capture.py", "promjson.py"}


def sums():
    out = {}
    for line in (TESTDATA / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        out[name] = digest
    return out


def test_sha256sums():
    listed = sums()
    assert len(listed) == 66  # 63 captures and store-v6 (data.mdb.gz, answers.json, its make.py)
    for name, digest in listed.items():
        assert hashlib.sha256((TESTDATA / name).read_bytes()).hexdigest() == digest, name
    present = {str(p.relative_to(TESTDATA)) for p in TESTDATA.rglob("*") if p.is_file()}
    assert present - NOT_FIXTURES == set(listed)


@pytest.mark.parametrize("name,how", [("remote-write-01", "write"), ("remote-write-02", "write"),
                                      ("remote-write-03", "write"), ("remote-write-metadata-01", "write"),
                                      ("remote-read-01", "read"), ("remote-read-02", "read"),
                                      ("remote-read-03", "read"), ("remote-read-response-01", "readresp")])
def test_promjson_gives_the_committed_json(name, how):
    r = subprocess.run([sys.executable, str(HERE / "promjson.py"), how, str(TESTDATA / "prometheus" / (name + ".bin"))],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (TESTDATA / "prometheus" / (name + ".json")).read_bytes()
