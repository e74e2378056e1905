#!/usr/bin/env python3
"""The Debian package, installed as an operator would: `cpack -G DEB` from the build tree,
then `apt-get install ./bagd_*.deb` in a clean Debian 12 root made by mmdebstrap (apt pulls
the dependencies the package declares from the host's mirror), then bagd and bagctl run in
that root: --version, --help, and --check of the installed /etc/bagd/bagd.conf. The root is
always deleted.

    BAGD_BUILD=build python3 tests/package/deb_install.py
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

BUILD = os.path.abspath(os.environ.get("BAGD_BUILD", "build"))


def run(cmd, **kw):
    print("+", " ".join(cmd) if isinstance(cmd, list) else cmd, flush=True)
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def host_sources():
    """The host's apt sources (the mirror CI may use), for the new root."""
    files = sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
    if os.path.exists("/etc/apt/sources.list") and os.path.getsize("/etc/apt/sources.list") > 0:
        files.insert(0, "/etc/apt/sources.list")
    return files


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (mmdebstrap --mode=root)")
        return 0
    prefix = os.environ.get("BAGD_INSTALL_PREFIX", "/usr")
    if prefix != "/usr":
        print(f"SKIP: the build tree installs to {prefix}; a system package needs -DCMAKE_INSTALL_PREFIX=/usr")
        return 0
    for tool in ("cpack", "mmdebstrap", "dpkg-deb"):
        if shutil.which(tool) is None:
            print(f"FAIL: {tool} is missing (make deps installs it)")
            return 1
    work = tempfile.mkdtemp(prefix="bagd-deb-")
    try:
        run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", work])
        debs = glob.glob(os.path.join(work, "bagd_*.deb"))
        assert len(debs) == 1, f"expected one bagd_*.deb in {work}, found {debs}"
        deb = debs[0]
        info = run(["dpkg-deb", "--info", deb]).stdout
        print(info)
        depends = next((l for l in info.splitlines() if l.strip().startswith("Depends:")), "")
        for lib in ("libprotobuf", "libgrpc++", "libabsl", "libre2"):
            assert lib in depends, f"Depends does not name {lib}: {depends!r}"
        contents = run(["dpkg-deb", "--contents", deb]).stdout
        for path in ("./usr/sbin/bagd", "./usr/bin/bagctl", "./etc/bagd/bagd.conf", "./etc/default/bagd",
                     "./usr/lib/systemd/system/bagd.service", "./usr/share/man/man8/bagd.8",
                     "./usr/share/man/man8/bagctl.8", "./usr/share/man/man5/bagd.conf.5",
                     "./usr/share/doc/bagd/docs/operations.md"):
            assert any(line.split()[-1].startswith(path) for line in contents.splitlines()), f"{path} not in the package"
        ctrl = os.path.join(work, "control")
        run(["dpkg-deb", "--control", deb, ctrl])
        with open(os.path.join(ctrl, "conffiles")) as f:
            assert "/etc/bagd/bagd.conf" in f.read().split(), "bagd.conf is not a conffile"

        root = os.path.join(work, "root")
        mirrors = host_sources() or ["http://deb.debian.org/debian"]
        shutil.copy(deb, os.path.join(work, "bagd.deb"))
        run(["mmdebstrap", "--variant=apt", "--mode=root", "--quiet", "bookworm", root, *mirrors,
             f"--customize-hook=copy-in {os.path.join(work, 'bagd.deb')} /tmp",
             "--customize-hook=chroot \"$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q /tmp/bagd.deb"])

        def in_root(*cmd):
            return run(["chroot", root, *cmd])

        v = in_root("/usr/sbin/bagd", "--version").stdout
        assert v.startswith("bagd 0."), v
        assert in_root("/usr/bin/bagctl", "--version").stdout.startswith("bagctl 0.")
        assert "--config FILE" in in_root("/usr/sbin/bagd", "--help").stdout
        check = in_root("/usr/sbin/bagd", "--config", "/etc/bagd/bagd.conf", "--check")
        print(check.stdout, check.stderr)
        unit = open(os.path.join(root, "usr/lib/systemd/system/bagd.service")).read()
        assert "ExecStartPre=/usr/sbin/bagd --config /etc/bagd/bagd.conf --check" in unit
        assert "Type=notify" in unit
        status = in_root("dpkg-query", "-W", "-f=${Status} ${Version}", "bagd").stdout
        assert status.startswith("install ok installed"), status
        print("PASS: installed in a clean bookworm root:", status, "|", v.strip())
        return 0
    except subprocess.CalledProcessError as e:
        print(f"FAIL: {e.cmd} exited {e.returncode}\nstdout: {e.stdout}\nstderr: {e.stderr}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
