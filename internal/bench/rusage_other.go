//go:build !unix

package bench

import "os"

func maxRSS(*os.ProcessState) int64 { return 0 }
