package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

static void *lib;
static void *sym(const char *n) { return lib ? dlsym(lib, n) : NULL; }

static int cu_open(void) {
	lib = dlopen("libcuda.so.1", RTLD_NOW);
	return lib != NULL;
}
static CUresult cu_init(void) { CUresult (*f)(unsigned) = sym("cuInit"); return f ? f(0) : -1; }
static CUresult cu_ctx(CUcontext *c) {
	CUdevice d; CUresult (*get)(CUdevice*, int) = sym("cuDeviceGet");
	CUresult (*mk)(CUcontext*, unsigned, CUdevice) = sym("cuCtxCreate_v2");
	if (!get || !mk) return -1;
	CUresult r = get(&d, 0); if (r) return r;
	return mk(c, 0, d);
}
static CUresult cu_alloc(CUdeviceptr *p, size_t n) {
	CUresult (*a)(CUdeviceptr*, size_t) = sym("cuMemAlloc_v2");
	CUresult (*s)(CUdeviceptr, unsigned char, size_t) = sym("cuMemsetD8_v2");
	if (!a || !s) return -1;
	CUresult r = a(p, n); if (r) return r;
	return s(*p, 1, n);
}
static CUresult cu_kernel(const char *ptx, CUfunction *fn) {
	CUmodule m; CUresult (*load)(CUmodule*, const void*) = sym("cuModuleLoadData");
	CUresult (*get)(CUfunction*, CUmodule, const char*) = sym("cuModuleGetFunction");
	if (!load || !get) return -1;
	CUresult r = load(&m, ptx); if (r) return r;
	return get(fn, m, "spin");
}
static CUresult cu_launch(CUfunction fn, CUdeviceptr out, unsigned long long iters, unsigned blocks) {
	CUresult (*l)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) = sym("cuLaunchKernel");
	CUresult (*sync)(void) = sym("cuCtxSynchronize");
	if (!l || !sync) return -1;
	void *args[] = {&out, &iters};
	CUresult r = l(fn, blocks, 1, 1, 256, 1, 1, 0, NULL, args, NULL); if (r) return r;
	return sync();
}
static int cu_sms(void) {
	int v = 0; CUresult (*a)(int*, int, CUdevice) = sym("cuDeviceGetAttribute");
	if (a) a(&v, 16, 0); // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	return v;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"
)

// spinPTX is a kernel that keeps every thread in a dependent FMA loop for
// iters iterations and stores the result (so it is not optimised away).
// PTX, JIT-compiled by the driver: no CUDA toolkit needed on the node.
const spinPTX = `.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 out, .param .u64 iters)
{
	.reg .pred %p;
	.reg .f32 %f<3>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [iters];
	mov.u64 %rd3, 0;
	mov.f32 %f1, 0f3F800000;
LOOP:
	fma.rn.f32 %f1, %f1, 0f3F7FFFFE, 0f38D1B717;
	add.u64 %rd3, %rd3, 1;
	setp.lt.u64 %p, %rd3, %rd2;
	@%p bra LOOP;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mad.lo.u32 %r1, %r2, %r3, %r1;
	cvta.to.global.u64 %rd4, %rd1;
	mul.wide.u32 %rd5, %r1, 4;
	add.u64 %rd4, %rd4, %rd5;
	st.global.f32 [%rd4], %f1;
	ret;
}
`

// Load is what the stand-in engine did.
type Load struct {
	PID         int     `json:"pid"`
	Backend     string  `json:"backend"`
	MemoryBytes uint64  `json:"memory_bytes"`
	Launches    int     `json:"kernel_launches"`
	BusySeconds float64 `json:"busy_seconds"`
	HoldSeconds float64 `json:"hold_seconds"`
	Started     float64 `json:"started_unix"`
	BusyEnded   float64 `json:"busy_ended_unix"`
	Exited      float64 `json:"exited_unix"`
}

// load is a stand-in inference engine on GPU 0: a CUDA context, memGiB of
// GPU memory, SM-bound kernels on every SM for busy, then the context held
// idle for hold before exiting. On sim it only keeps the times.
func load(sim bool, busy, hold time.Duration, memGiB float64) (Load, error) {
	l := Load{PID: os.Getpid(), Backend: "cuda", Started: unixNow()}
	if sim {
		l.Backend = "sim (no GPU: times only)"
		time.Sleep(busy)
		l.BusyEnded = unixNow()
		time.Sleep(hold)
		l.BusySeconds, l.HoldSeconds, l.Exited = busy.Seconds(), hold.Seconds(), unixNow()
		return l, nil
	}
	if C.cu_open() == 0 {
		return l, errors.New("libcuda.so.1 not found")
	}
	if r := C.cu_init(); r != 0 {
		return l, fmt.Errorf("cuInit: CUresult %d", r)
	}
	var ctx C.CUcontext
	if r := C.cu_ctx(&ctx); r != 0 {
		return l, fmt.Errorf("cuCtxCreate: CUresult %d", r)
	}
	var mem C.CUdeviceptr
	l.MemoryBytes = uint64(memGiB * (1 << 30))
	if r := C.cu_alloc(&mem, C.size_t(l.MemoryBytes)); r != 0 {
		return l, fmt.Errorf("cuMemAlloc %d bytes: CUresult %d", l.MemoryBytes, r)
	}
	ptx := C.CString(spinPTX)
	defer C.free(unsafe.Pointer(ptx))
	var fn C.CUfunction
	if r := C.cu_kernel(ptx, &fn); r != 0 {
		return l, fmt.Errorf("loading the spin kernel: CUresult %d", r)
	}
	blocks := C.uint(max(int(C.cu_sms()), 1) * 8)
	began := time.Now()
	iters := C.ulonglong(1 << 20)
	for time.Since(began) < busy {
		t := time.Now()
		if r := C.cu_launch(fn, mem, iters, blocks); r != 0 {
			return l, fmt.Errorf("launching the spin kernel: CUresult %d", r)
		}
		l.Launches++
		if el := time.Since(t); el < 100*time.Millisecond && iters < 1<<34 {
			iters *= 2 // aim at launches of ~0.1-0.2 s
		}
	}
	l.BusySeconds, l.BusyEnded = time.Since(began).Seconds(), unixNow()
	time.Sleep(hold) // context and memory still held, SMs idle
	l.HoldSeconds, l.Exited = hold.Seconds(), unixNow()
	return l, nil // the process exit frees the context
}

func unixNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }
