package tmpflt

import (
	"syscall"
	"testing"
	"time"

	"github.com/klpresolve/klpresolve/kallsyms"
)

func TestFaults(t *testing.T) {
	ix, err := kallsyms.Open("/work/shared/corpus/host/kallsyms-6.18.44-firecracker.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := t.TempDir() + "/k.snap"
	ix.WriteSnapshotFile(snap)
	raw := t.TempDir() + "/k.raw"
	ix.WriteSnapshotRawFile(raw)
	for _, p := range []string{snap, raw, "/work/shared/corpus/host/kallsyms-6.18.44-firecracker.txt"} {
		for k := 0; k < 4; k++ {
			var a, b syscall.Rusage
			syscall.Getrusage(0, &a)
			t0 := time.Now()
			x, err := kallsyms.Open(p, nil)
			d := time.Since(t0)
			syscall.Getrusage(0, &b)
			if err != nil {
				t.Fatal(err)
			}
			_ = x
			t.Logf("%s: %v minflt %d", p[len(p)-6:], d, b.Minflt-a.Minflt)
		}
	}
}
