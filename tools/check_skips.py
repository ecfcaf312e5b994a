#!/usr/bin/env python3
"""The CI's skip check (issue #63): after ctest, every skipped test must be one this machine is
allowed to skip. A test that must run here and skipped fails the check, as a failure would.

    python3 tools/check_skips.py BUILD/ctest-junit.xml      (tools/test.sh's ctest stage)
    python3 tools/check_skips.py --self-test

It reads ctest's JUnit file (ctest --output-junit): each test of status "notrun" with a <skipped>
element, and its output (a GTEST_SKIP's message; tests/py/ctest_unittest.py's "SKIPPED: ..."
lines). A skip is allowed only when an entry of ALLOWED matches the test's name and a line of its
output, and that entry's condition holds on this machine: a CPU feature the test needs is absent,
the process cannot mount, there is a GPU. Anything else (no venv, no opencv-doc, no oneDNN,
no matplotlib, a skip with no reason) is set-up that tools/setup.sh and tools/peers_setup.sh make,
and its skip fails the check. Exits 0 when every skip is allowed, 1 naming each one that is not,
2 when the file cannot be read."""
import os
import platform
import re
import sys
import tempfile
import xml.etree.ElementTree as ET


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def can_mount():
    """CAP_SYS_ADMIN in the effective set (mount -t tmpfs needs it; root in a container may lack it)."""
    try:
        with open("/proc/self/status") as f:
            cap = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
        return bool(cap & (1 << 21))
    except (OSError, StopIteration, ValueError):
        return False


def has_gpu():
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


FLAGS = cpu_flags()
X86 = platform.machine() in ("x86_64", "AMD64")

# (test name regex, output regex, condition: the skip is allowed only when it holds here, why)
ALLOWED = [
    (r"^Winograd", r"this CPU has no AVX2\+FMA", lambda: not {"avx2", "fma"} <= FLAGS,
     "the kernels are built for AVX2+FMA; a CPU without them cannot run them"),
    (r"^(FirstConv|PoolKernels)", r"no AVX-512 here", lambda: not {"avx512f", "avx512bw", "avx512vl"} <= FLAGS,
     "the u8 kernels need AVX-512 F/BW/VL"),
    (r"^Route\.", r"the default route here is the TorchScript engine \(no AVX2 oneDNN\)", lambda: "avx2" not in FLAGS,
     "without AVX2 the default route is TorchScript, which the other Route tests check"),
    (r"^OneDnn\.", r"not an x86-64 build", lambda: not X86, "the CPUID mask (tools/cpuid_mask.c) is x86-64 only"),
    (r"^OneDnn\.", r"cannot fault CPUID", lambda: "cpuid_fault" not in FLAGS,
     "the AVX2-only run needs CPUID faulting (arch_prctl ARCH_SET_CPUID), which this CPU or VM lacks"),
    (r"^py\.vit_onednn\.small$", r"cannot fault CPUID", lambda: "cpuid_fault" not in FLAGS,
     "the AVX2-only run needs CPUID faulting (arch_prctl ARCH_SET_CPUID), which this CPU or VM lacks"),
    (r"^Int8\.", r"no VNNI on this CPU", lambda: not FLAGS & {"avx512_vnni", "avx_vnni"},
     "int8 runs on VNNI only (Int8.RefusedWithTheReason checks the refusal)"),
    (r"^py\.tf_fidelity$", r"the CPU has no AVX-512 BF16", lambda: "avx512_bf16" not in FLAGS,
     "vecbench refuses --precision bf16 without AVX-512 BF16 (the other tf_fidelity tests ran)"),
    (r"^StoreCli\.AFullDisk", r"cannot mount a small tmpfs here", lambda: not can_mount(),
     "the full-disk case mounts a 400 KiB tmpfs, which needs CAP_SYS_ADMIN"),
    (r"^py\.install_check$", r"cannot mount over the source tree here", lambda: not can_mount(),
     "hiding the source tree from the installed binary mounts a tmpfs in a private namespace: CAP_SYS_ADMIN"),
    (r"^(TrustedFile|FidPresets)\.", r"needs root, to give", lambda: os.geteuid() != 0,
     "giving a folder or a link to another user (uid 65534) needs root; CI runs the tests as root"),
    (r"^Cuda\.DevicesSaysWhatTheBuildHas", r"this machine has a GPU", has_gpu,
     "the test is of a machine without a GPU (its refusals)"),
]


def skipped_tests(junit):
    """(name, output) of every skipped test in ctest's JUnit file."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.get("status") == "notrun" or case.find("skipped") is not None:
            text = case.findtext("system-out") or ""
            out.append((case.get("name", "?"), text))
    return out


def verdict(name, output):
    """(allowed, why): the ALLOWED entry that lets `name` skip here, or why none does."""
    lines = output.splitlines()
    for test_re, reason_re, condition, why in ALLOWED:
        if re.search(test_re, name) and any(re.search(reason_re, line) for line in lines):
            if condition():
                return True, why
            return False, f"its reason ({reason_re!r}) does not hold on this machine"
    reasons = [line.strip() for line in lines if "SKIPPED" in line or "Skipped" in line]
    return False, "not an allowed skip" + (f": {reasons[-1]}" if reasons else " (no reason in its output)")


def check(junit, log=sys.stdout):
    skips = skipped_tests(junit)
    bad = 0
    for name, output in skips:
        ok, why = verdict(name, output)
        bad += not ok
        print(f"check_skips: {name}: {'allowed here' if ok else 'NOT ALLOWED'}: {why}", file=log)
    print(f"check_skips: {len(skips)} skipped, {bad} of them not allowed on this machine", file=log)
    return 1 if bad else 0


def self_test():
    xml = """<?xml version="1.0"?><testsuite>
<testcase name="ok" status="run"><system-out></system-out></testcase>
<testcase name="py.fid_check" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
<system-out>OK (skipped=1)
SKIPPED: fid_check.py: x: no /v/fid-tools/bin/python: tools/peers_setup.sh tensorflow makes it</system-out></testcase>
<testcase name="py.tf_fidelity" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
<system-out>SKIPPED: tf_fidelity.py: t: the CPU has no AVX-512 BF16 (vecbench refuses --precision bf16 here)</system-out>
</testcase></testsuite>"""
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(xml)
    try:
        names = [n for n, _ in skipped_tests(f.name)]
        assert names == ["py.fid_check", "py.tf_fidelity"], names
        assert not verdict(*skipped_tests(f.name)[0])[0], "a missing venv was allowed"
        bf16_ok, _ = verdict(*skipped_tests(f.name)[1])
        assert bf16_ok == ("avx512_bf16" not in FLAGS), "the bf16 skip's condition was not applied"
        with open(os.devnull, "w") as null:
            assert check(f.name, null) == 1
    finally:
        os.unlink(f.name)
    print("check_skips self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return check(argv[1])
    except (OSError, ET.ParseError) as e:
        print(f"check_skips: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
