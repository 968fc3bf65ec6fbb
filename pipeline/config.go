package pipeline

import (
	"github.com/klpresolve/klpresolve/internal/kconfig"
	"github.com/klpresolve/klpresolve/modplt"
)

// ErrMalformedConfig is wrapped by the error for a kernel configuration
// line that does not parse (it names the file and the line).
var ErrMalformedConfig = kconfig.ErrMalformed

// configLinkOptions sets in lo what the kernel's configuration decides
// about how its loader lays out and links modules, for options lo leaves
// at their defaults: a page size already given stays, and the No*
// options are only ever turned on.
//   - no CONFIG_MODULE_UNLOAD: .exit sections go to init
//     (module_init_layout_section());
//   - arm64 without CONFIG_RANDOMIZE_BASE: no branch PLT entries (6.1's
//     count_plts()); its page size (CONFIG_ARM64_{4K,16K,64K}_PAGES);
//   - ppc64's page size (CONFIG_PPC_{4K,64K}_PAGES);
//   - s390 without CONFIG_EXPOLINE: no expoline thunk.
func configLinkOptions(c *kconfig.Config, lo modplt.LinkOptions) modplt.LinkOptions {
	if !c.Enabled("MODULE_UNLOAD") {
		lo.NoModuleUnload = true
	}
	type pageOpt struct {
		opt  string
		size uint64
	}
	var pages []pageOpt // (a Kconfig choice: one of them is set)
	switch {
	case c.Enabled("ARM64"):
		if !c.Enabled("RANDOMIZE_BASE") {
			lo.NoRandomizeBase = true
		}
		pages = []pageOpt{{"ARM64_4K_PAGES", 4 << 10}, {"ARM64_16K_PAGES", 16 << 10}, {"ARM64_64K_PAGES", 64 << 10}}
	case c.Enabled("PPC64"):
		pages = []pageOpt{{"PPC_4K_PAGES", 4 << 10}, {"PPC_64K_PAGES", 64 << 10}}
	case c.Enabled("S390"):
		if !c.Enabled("EXPOLINE") {
			lo.NoExpoline = true
		}
	}
	for _, p := range pages {
		if lo.PageSize == 0 && c.Enabled(p.opt) {
			lo.PageSize = p.size
		}
	}
	return lo
}

// ConfigLinkOptions is lo with what the kernel configuration at path (its
// /boot/config-RELEASE, /proc/config.gz; compressed or not) decides of
// how the kernel's loader lays out and links modules, where lo leaves it
// at its default: see Kernel.Config.
func ConfigLinkOptions(path string, lo modplt.LinkOptions) (modplt.LinkOptions, error) {
	c, err := kconfig.Open(path)
	if err != nil {
		return lo, err
	}
	return configLinkOptions(c, lo), nil
}
