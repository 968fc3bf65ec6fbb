// SPDX-License-Identifier: GPL-2.0-only

package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/klpresolve/klpresolve/kallsyms"
	"github.com/klpresolve/klpresolve/kgen"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
	"github.com/klpresolve/klpresolve/pipeline"
)

// Resolve a livepatch module against a kernel's symbols, link it and
// record it in a CFI shadow: what a build tool's test does in a few lines.
func Example() {
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Open("../testdata/klp/livepatch-sample.ko")
	if err != nil {
		log.Fatal(err)
	}
	// A 6.1 kernel's rules (nothing in this small kallsyms tells).
	gen := pipeline.TellGeneration(ix, pipeline.GenerationHints{Asked: kgen.Linux6_1})
	rep, err := pipeline.Run(m, ix, pipeline.Options{Link: true, Kernel: gen})
	if err != nil {
		log.Fatal(err)
	}
	res := rep.Resolution
	fmt.Printf("resolved %d, deferred %d (%v), errors %d\n", res.Resolved, res.Deferred, res.DeferredObjects, res.Errors)
	fmt.Printf("linked %d relocations; unresolved %v\n", rep.Image.Relocs, rep.Image.Unresolved)
	fmt.Println("kernel rules:", rep.Kernel)
	// Output:
	// resolved 6, deferred 1 ([xfs]), errors 0
	// linked 6 relocations; unresolved [no_such_function]
	// kernel rules: Linux 6.1 (from --kernel-version)
}

// Check a patch against several kernel builds at once.
func ExampleFleet() {
	m, err := klp.Open("../testdata/klp/livepatch-sample.ko")
	if err != nil {
		log.Fatal(err)
	}
	rows, _ := pipeline.Fleet(context.Background(), m, pipeline.KernelFiles("../testdata/kallsyms/example.txt", "../testdata/kallsyms/missing.txt"), pipeline.FleetOptions{})
	for _, r := range rows {
		fmt.Printf("%s ok=%v resolved=%d first error=%q\n", r.Kernel, r.OK, r.Resolved, r.FirstError)
	}
	// Output:
	// ../testdata/kallsyms/example.txt ok=true resolved=6 first error=""
	// ../testdata/kallsyms/missing.txt ok=false resolved=0 first error="open ../testdata/kallsyms/missing.txt: no such file or directory"
}

// Check a patch against every kernel installed under a root, each with its
// own files (here one kernel, with none: a real root has its modules and
// Module.symvers, and the loader's checks then run too), giving the whole
// check a minute: a CI job's budget.
func ExampleKernelsUnder() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, err := os.MkdirTemp("", "root")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	kernel := filepath.Join(root, "boot", "System.map-6.1.0-example")
	example, _ := filepath.Abs("../testdata/kallsyms/example.txt")
	if err := os.MkdirAll(filepath.Dir(kernel), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.Symlink(example, kernel); err != nil {
		log.Fatal(err)
	}
	kernels, err := pipeline.KernelsUnder(ctx, root)
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Open("../testdata/klp/livepatch-sample.ko")
	if err != nil {
		log.Fatal(err)
	}
	rows, err := pipeline.Fleet(ctx, m, kernels, pipeline.FleetOptions{})
	if err != nil {
		log.Fatal(err) // the minute ran out: the rows not checked say so
	}
	for _, r := range rows {
		fmt.Printf("%s ok=%v resolved=%d versions checked=%v vermagic checked=%v\n", filepath.Base(r.Kernel), r.OK, r.Resolved, r.Versions != nil, r.Magic != nil)
	}
	// Output:
	// System.map-6.1.0-example ok=true resolved=6 versions checked=false vermagic checked=false
}

// Link a module whose dependencies the kernel's symbols lack (a System.map
// lists no module): they are laid out first from their files, as modprobe
// loads them. (The small example kallsyms lacks some of the kernel
// functions Kbuild's code calls: those stay unresolved.)
func ExampleLink_dependencies() {
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Open("../testdata/kbuild/deps/klpdep-top.ko")
	if err != nil {
		log.Fatal(err)
	}
	mf, err := pipeline.FindModules(context.Background(), []string{"../testdata/kbuild/deps"})
	if err != nil {
		log.Fatal(err)
	}
	img, deps, err := pipeline.Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, mf)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range deps {
		fmt.Printf("%s at %#x, %d exports\n", d.Name, d.Base(), d.Exports)
	}
	fmt.Printf("%s at %#x; unresolved %v\n", m.KernelName(), img.Sections[0].Addr, img.Unresolved)
	// Output:
	// klpdep_base at 0xffffffffc0000000, 2 exports
	// klpdep_mid at 0xffffffffc0005000, 1 exports
	// klpdep_top at 0xffffffffc000a000; unresolved [__fentry__ __x86_return_thunk _printk]
}

// A kernel whose symbols show another architecture than the module's is
// refused before anything resolves: names alone would (vfs_read is in
// every kernel), and the answer would be about the wrong kernel.
func ExampleCheckArch() {
	arm64 := "ffff800008010000 T _stext\nffff800008010040 T primary_entry\nffff8000083ab520 T vfs_read\n"
	ix, err := kallsyms.ParseBytes("arm64-kallsyms", []byte(arm64), kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Open("../testdata/klp/livepatch-sample.ko")
	if err != nil {
		log.Fatal(err)
	}
	_, err = pipeline.Run(m, ix, pipeline.Options{})
	fmt.Println(errors.Is(err, pipeline.ErrArchMismatch))
	fmt.Println(err)
	// Output:
	// true
	// arm64-kallsyms: the module and the kernel are for different architectures: the module is x86_64, the kernel is arm64 (its vmlinux has primary_entry)
}

// Link a module as the kernel's loader and livepatch would, without the
// rest of a Run: the .klp.rela section for xfs, which this kernel has not
// loaded, waits for xfs, and only the call to no_such_function fails.
func ExampleLink() {
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Open("../testdata/klp/livepatch-sample.ko")
	if err != nil {
		log.Fatal(err)
	}
	img, _, err := pipeline.Link(m, m.Resolve(ix, klp.ResolveOptions{}), ix, modplt.LinkOptions{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d applied, %d failed, unresolved %v, .text at %#x\n", img.Relocs, len(img.Errors), img.Unresolved, img.Section(".text").Addr)
	// Output:
	// 6 applied, 1 failed, unresolved [no_such_function], .text at 0xffffffffc0000000
}

// Why a module's ordinary symbols may not resolve: modules it depends on
// (its .modinfo depends=, as modpost writes it, with dashes) that this
// kernel has not loaded; i2c-algo-bit has been, as i2c_algo_bit.
func ExampleUnloadedDepends() {
	kernel := "ffffffff81000000 T _stext\nffffffffc0003000 T i2c_bit_add_bus\t[i2c_algo_bit]\n"
	ix, err := kallsyms.ParseBytes("kallsyms", []byte(kernel), kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pipeline.UnloadedDepends("drm,i2c-algo-bit,gpu-sched", ix, []string{"drm_dev_register"}))
	// Output:
	// [drm gpu_sched]
}

// Check a patch as the loader of a kernel with this build configuration
// would: without CONFIG_LIVEPATCH it refuses every livepatch module,
// whatever the kernel's symbols say.
func ExampleConfig_Apply() {
	dir, err := os.MkdirTemp("", "config")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config-6.1.0")
	config := "CONFIG_X86_64=y\nCONFIG_MODULE_UNLOAD=y\nCONFIG_STRICT_MODULE_RWX=y\n# CONFIG_LIVEPATCH is not set\n"
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		log.Fatal(err)
	}
	c, err := pipeline.OpenConfig(path)
	if err != nil {
		log.Fatal(err)
	}
	ix, err := kallsyms.Open("../testdata/kallsyms/example.txt", kallsyms.Options{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := klp.Open("../testdata/klp/livepatch-sample.ko")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := pipeline.Run(m, ix, c.Apply(pipeline.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	e := rep.Resolution.LoadErr
	fmt.Println(errors.Is(e, klp.ErrNoLivepatch), e.Kind())
	fmt.Println(e.Kernel)
	// Output:
	// true no_livepatch
	// livepatch_sample: module is marked as livepatch module, but livepatch support is disabled
}
