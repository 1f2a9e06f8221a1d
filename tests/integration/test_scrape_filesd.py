"""file_sd_configs edge cases (docs/protocols.md: files are watched, only well-formed files are applied),
against a real Go target (gotarget); refresh_interval is 1m, so every change here must be seen
through the file watch:

  - a file that turns invalid keeps the targets it gave before (and counts an SD failure); fixed
    again, it applies;
  - a file replaced (rename) by one of the same size whose modification time was kept (cp -p,
    rsync -t, tar, a deploy tool that preserves times) is still a change: the new content applies."""

import json
import os
import time

import pytest

from conftest import require_tool
from scrape_util import GOROUTINE_ONLY, GoTarget, active_targets, config_text, wait_for, write_atomic


class Env:
    pass


@pytest.fixture(scope="module")
def env(module_server_factory, tmp_path_factory):
    require_tool("go")
    wd = tmp_path_factory.mktemp("scrape_filesd")
    e = Env()
    e.g = GoTarget(wd, seed=3).start()
    e.dir = wd / "sd"
    e.dir.mkdir()
    e.file = e.dir / "t.json"
    cfg = wd / "filesd.yml"
    cfg.write_text(config_text("1s", "1s", jobs=(
        "  - job_name: f\n"
        "    file_sd_configs:\n"
        "      - files: ['%s/*.json']\n"
        "        refresh_interval: 1m\n" % e.dir + GOROUTINE_ONLY)))
    e.srv = module_server_factory(name="filesd", config=str(cfg))
    yield e
    e.g.kill()


def group(env, v):
    return json.dumps([{"targets": [env.g.address], "labels": {"v": v}}]) + "\n"


def labels_v(env):
    return sorted(t["labels"].get("v") for t in active_targets(env.srv))


def test_invalid_file_keeps_its_targets(env):
    write_atomic(env.file, group(env, "one"))
    wait_for(lambda: labels_v(env) == ["one"], 5, "the target from the file")
    fails = env.srv.metrics()["profstore_sd_failures_total"]
    write_atomic(env.file, '[{"targets": ["%s"], "labels": {"v": "two"}\n' % env.g.address)  # no closing ]
    wait_for(lambda: env.srv.metrics()["profstore_sd_failures_total"] > fails, 5, "the SD failure counted")
    time.sleep(1)
    assert labels_v(env) == ["one"], "an invalid file keeps its previous targets"
    assert all(t["health"] == "up" for t in active_targets(env.srv))
    write_atomic(env.file, group(env, "two"))
    wait_for(lambda: labels_v(env) == ["two"], 5, "the fixed file applied")


def test_replaced_file_with_kept_mtime(env):
    write_atomic(env.file, group(env, "aaa"))
    wait_for(lambda: labels_v(env) == ["aaa"], 5, "the first content")
    time.sleep(0.5)
    st = os.stat(env.file)
    # a new file (new inode), the same size, the old modification time, moved into place
    tmp = env.dir / ".t.json.new"
    tmp.write_text(group(env, "bbb"))
    assert os.stat(tmp).st_size == st.st_size
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, env.file)
    try:
        wait_for(lambda: labels_v(env) == ["bbb"], 5, "the new content applied")
    except AssertionError:
        raise AssertionError("file_sd missed a replaced file (new inode, same size, same mtime): targets still %s "
                             "(seen only at the next refresh_interval, 1m here)" % labels_v(env))
