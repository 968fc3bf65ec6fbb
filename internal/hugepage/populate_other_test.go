// SPDX-License-Identifier: GPL-2.0-only

//go:build !linux

package hugepage

import "testing"

func populateFresh(t *testing.T) {}
