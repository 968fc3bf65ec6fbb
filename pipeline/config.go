// SPDX-License-Identifier: GPL-2.0-only

package pipeline

import (
	"github.com/klpresolve/klpresolve/diag"
	"github.com/klpresolve/klpresolve/internal/kconfig"
	"github.com/klpresolve/klpresolve/klp"
	"github.com/klpresolve/klpresolve/modplt"
)

// ErrMalformedConfig is wrapped by the error for a kernel configuration
// line that does not parse (it names the file and the line).
var ErrMalformedConfig = diag.ErrMalformedConfig

// Config is a kernel's build configuration (its .config, as
// /boot/config-RELEASE or /proc/config.gz): what it decides of how the
// kernel's module loader checks, lays out and links modules. It is
// immutable and safe for concurrent use.
type Config struct {
	c *kconfig.Config
}

// OpenConfig reads the kernel configuration at path (compressed or not;
// see Kernel.Config). A line that is none of the forms the kernel's
// confdata.c writes is an error wrapping ErrMalformedConfig.
func OpenConfig(path string) (*Config, error) {
	c, err := kconfig.Open(path)
	if err != nil {
		return nil, err
	}
	return &Config{c}, nil
}

// File names the file the configuration was read from.
func (c *Config) File() string { return c.c.Source }

// Apply is o with what the configuration decides: the loader's checks
// of a whole module (Options.Config: CONFIG_LIVEPATCH,
// CONFIG_STRICT_MODULE_RWX) and, in o.LinkOptions, what o leaves at
// its default (LinkOptions).
func (c *Config) Apply(o Options) Options {
	o.Config = c.Loader()
	o.LinkOptions = c.LinkOptions(o.LinkOptions)
	return o
}

// Loader is what the configuration says of the module loader's checks of
// a whole module (klp.ResolveOptions.Config).
func (c *Config) Loader() *klp.KernelConfig {
	return &klp.KernelConfig{File: c.File(), Livepatch: c.c.Enabled("LIVEPATCH"), StrictModuleRWX: c.c.Enabled("STRICT_MODULE_RWX"),
		ModulePLTs: c.c.Enabled("ARM_MODULE_PLTS") || c.c.Enabled("ARM64_MODULE_PLTS"), DynamicFtrace: c.c.Enabled("DYNAMIC_FTRACE")}
}

// LinkOptions is lo with what the configuration decides about how the
// kernel's loader lays out and links modules, for options lo leaves at
// their defaults: a page size already given stays, and the No* options
// are only ever turned on.
//   - no CONFIG_MODULE_UNLOAD: .exit sections go to init
//     (module_init_layout_section());
//   - arm64 without CONFIG_RANDOMIZE_BASE: no branch PLT entries (6.1's
//     count_plts()); its page size (CONFIG_ARM64_{4K,16K,64K}_PAGES);
//   - ppc64's page size (CONFIG_PPC_{4K,64K}_PAGES);
//   - arm with CONFIG_ARM_UNWIND and without CONFIG_VMSPLIT_3G: unwind
//     sections laid out as code (7.2);
//   - s390 without CONFIG_EXPOLINE: no expoline thunk.
func (c *Config) LinkOptions(lo modplt.LinkOptions) modplt.LinkOptions {
	if !c.c.Enabled("MODULE_UNLOAD") {
		lo.NoModuleUnload = true
	}
	if !c.c.Enabled("KALLSYMS_ALL") {
		lo.NoKallsymsAll = true
	}
	type pageOpt struct {
		opt  string
		size uint64
	}
	var pages []pageOpt // (a Kconfig choice: one of them is set)
	switch {
	case c.c.Enabled("ARM64"):
		if !c.c.Enabled("RANDOMIZE_BASE") {
			lo.NoRandomizeBase = true
		}
		pages = []pageOpt{{"ARM64_4K_PAGES", 4 << 10}, {"ARM64_16K_PAGES", 16 << 10}, {"ARM64_64K_PAGES", 64 << 10}}
	case c.c.Enabled("PPC64"):
		pages = []pageOpt{{"PPC_4K_PAGES", 4 << 10}, {"PPC_64K_PAGES", 64 << 10}}
	case c.c.Enabled("ARM"):
		if c.c.Enabled("ARM_UNWIND") && !c.c.Enabled("VMSPLIT_3G") {
			lo.ARMUnwindText = true
		}
	case c.c.Enabled("S390"):
		if !c.c.Enabled("EXPOLINE") {
			lo.NoExpoline = true
		}
	}
	for _, p := range pages {
		if lo.PageSize == 0 && c.c.Enabled(p.opt) {
			lo.PageSize = p.size
		}
	}
	return lo
}
