// SPDX-License-Identifier: GPL-2.0-only

package modname

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNames(t *testing.T) {
	assert.Equal(t, "i2c_algo_bit", Of("i2c-algo-bit"))
	for path, want := range map[string]string{
		"/lib/modules/6.1.0-57-amd64/kernel/fs/xfs/xfs.ko": "xfs",
		"drivers/i2c/algos/i2c-algo-bit.ko.xz":             "i2c_algo_bit",
		"livepatch-sample.ko.zst":                          "livepatch_sample",
		"crc-t10dif.ko.gz":                                 "crc_t10dif",
		"patch.o":                                          "",
		"README":                                           "",
	} {
		assert.Equal(t, want, FromFile(path), path)
	}
	assert.Equal(t, "livepatch_sample", FromObject("testdata/klp/livepatch-sample.o"))
	assert.Equal(t, "xfs", FromObject("xfs.ko.zst"))
}
