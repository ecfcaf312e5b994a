/* cpuid_mask: make a process see an x86 CPU with fewer instruction-set extensions than it has.
 *
 *   cc -O2 -shared -fPIC -o cpuid_mask.so tools/cpuid_mask.c
 *   CPUID_MASK=avx2 LD_AUDIT=$PWD/cpuid_mask.so PROGRAM ...
 *
 * (LD_AUDIT, not LD_PRELOAD: a preloaded library starts after the libraries a program links have
 * run their constructors, and oneDNN reads CPUID in its own.)
 *
 * Why: the project's machines change between sessions (AVX2-only AMD Zen 3, AVX-512 Zen 4/5,
 * Intel Xeons with and without AMX), and a benchmark of the AVX2 route beside ONNX Runtime and
 * OpenVINO needs all three programs on the code an AVX2-only CPU runs. oneDNN and OpenVINO can be
 * held with ONEDNN_MAX_CPU_ISA; ONNX Runtime's MLAS reads CPUID itself and has no such setting.
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID 0, on CPUs and KVM guests with the
 * `cpuid_fault` flag) makes every CPUID instruction of the process raise SIGSEGV (si_code
 * SI_KERNEL). The handler runs the real CPUID with faulting briefly off, clears the feature bits
 * the chosen mask removes, writes EAX-EDX into the interrupted context and steps over the 2-byte
 * instruction. The setting is per thread and inherited by threads and fork()ed children (not
 * across execve: wrap each program). What it cannot change: XGETBV (the OS still enables the
 * AVX-512 and AMX state; every library checked here tests the CPUID bit as well), /proc/cpuinfo,
 * glibc's own string functions (chosen by the dynamic loader before this library runs), the
 * caches and the microarchitecture: a masked Intel Xeon runs AVX2 code on Intel's cores, not on
 * AMD's. A program that installs its own SIGSEGV handler afterwards (sanitizers, JVMs) takes the
 * CPUID faults itself and crashes: this is for benchmarks and tests of native libraries.
 *
 * CPUID_MASK: `avx2` (default: AVX2, FMA, F16C, VAES, VPCLMULQDQ and below, as on AMD Zen 3: no
 * AVX-512 of any kind, no AVX-VNNI, no AMX) or `avx512` (AVX-512 F/CD/BW/DQ/VL, VNNI and BF16 as on
 * AMD Zen 4: no AVX512-FP16, no AMX). The library refuses to start (exit 125 with the reason) when
 * the kernel cannot fault CPUID or the mask is unknown, so that no run is labelled with an ISA it
 * did not have. CPUID_MASK_QUIET=1 leaves out the line it writes to standard error at start.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define BIT(n) (1u << (n))

/* Bits cleared in leaf 7 subleaf 0 (EBX, ECX, EDX) and subleaf 1 (EAX, EDX). */
struct mask {
  const char* name;
  uint32_t l7_ebx, l7_ecx, l7_edx, l71_eax, l71_edx;
};

/* AVX-512 F(16) DQ(17) IFMA(21) PF(26) ER(27) CD(28) BW(30) VL(31); VBMI(1) VBMI2(6) GFNI(8)
 * VNNI(11) BITALG(12) VPOPCNTDQ(14); 4VNNIW(2) 4FMAPS(3) VP2INTERSECT(8) AMX-BF16(22) FP16(23)
 * AMX-TILE(24) AMX-INT8(25); subleaf 1: AVX-VNNI(4) AVX512-BF16(5) AMX-FP16(21) AVX-IFMA(23);
 * AVX-VNNI-INT8(4) AVX-NE-CONVERT(5) AMX-COMPLEX(8) AVX-VNNI-INT16(10) AVX10(19). */
static const struct mask kMasks[] = {
    {"avx2", BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31),
     BIT(1) | BIT(6) | BIT(8) | BIT(11) | BIT(12) | BIT(14),
     BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25), BIT(4) | BIT(5) | BIT(21) | BIT(23),
     BIT(4) | BIT(5) | BIT(8) | BIT(10) | BIT(19)},
    {"avx512", BIT(26) | BIT(27), 0, BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25),
     BIT(4) | BIT(21) | BIT(23), BIT(4) | BIT(5) | BIT(8) | BIT(10) | BIT(19)},
};
static const struct mask* g_mask;

static long set_cpuid(int enabled) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void on_segv(int sig, siginfo_t* info, void* context) {
  ucontext_t* uc = (ucontext_t*)context;
  greg_t* r = uc->uc_mcontext.gregs;
  const unsigned char* ip = (const unsigned char*)r[REG_RIP];
  /* A CPUID fault is a general-protection fault (SI_KERNEL); anything else is a real crash: give
   * it the default action (the instruction faults again and the process dies as it would have). */
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
    signal(sig, SIG_DFL);
    return;
  }
  const unsigned leaf = (unsigned)r[REG_RAX], sub = (unsigned)r[REG_RCX];
  unsigned a = 0, b = 0, c = 0, d = 0;
  set_cpuid(1);
  __cpuid_count(leaf, sub, a, b, c, d);
  set_cpuid(0);
  if (leaf == 7 && sub == 0) b &= ~g_mask->l7_ebx, c &= ~g_mask->l7_ecx, d &= ~g_mask->l7_edx;
  if (leaf == 7 && sub == 1) a &= ~g_mask->l71_eax, d &= ~g_mask->l71_edx;
  r[REG_RAX] = a, r[REG_RBX] = b, r[REG_RCX] = c, r[REG_RDX] = d; /* CPUID zero-extends */
  r[REG_RIP] += 2;
}

static void die(const char* why) {
  fprintf(stderr, "cpuid_mask: %s\n", why);
  _exit(125);
}

static void cpuid_mask_start(void) {
  static int started;
  if (started) return;
  started = 1;
  const char* want = getenv("CPUID_MASK");
  if (!want || !*want) want = "avx2";
  for (size_t i = 0; i < sizeof kMasks / sizeof kMasks[0]; ++i)
    if (strcmp(want, kMasks[i].name) == 0) g_mask = &kMasks[i];
  if (!g_mask) die("CPUID_MASK must be avx2 or avx512");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, NULL) != 0) die("cannot install the SIGSEGV handler");
  if (set_cpuid(0) != 0) die("this kernel or CPU cannot fault CPUID (no cpuid_fault flag): the mask would not hold");
  const char* quiet = getenv("CPUID_MASK_QUIET");
  if (!quiet || strcmp(quiet, "1") != 0) fprintf(stderr, "cpuid_mask: this process sees CPUID as %s\n", g_mask->name);
}

/* As LD_PRELOAD: a constructor, which runs after the constructors of the libraries the program
 * links (oneDNN reads CPUID in its own: too late for it). As LD_AUDIT: the dynamic loader calls
 * la_version before it loads the program's libraries, so every constructor sees the mask. */
__attribute__((constructor)) static void cpuid_mask_preload(void) { cpuid_mask_start(); }

unsigned la_version(unsigned version) {
  cpuid_mask_start();
  return version;
}
