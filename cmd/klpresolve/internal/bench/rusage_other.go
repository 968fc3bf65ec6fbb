// SPDX-License-Identifier: GPL-2.0-only

//go:build !unix

package bench

import "os"

func maxRSS(*os.ProcessState) int64 { return 0 }
