package kallsyms_test

import (
	"fmt"
	"strings"

	"github.com/klpresolve/klpresolve/kallsyms"
)

func ExampleIndex_Lookup() {
	text := `ffffffff81000100 t helper
ffffffff81000200 T vfs_read
ffffffff81000300 t helper
ffffffffc0001000 t helper	[xfs]
`
	ix, _ := kallsyms.Parse("example", strings.NewReader(text), nil)
	s, _ := ix.Lookup("vmlinux", "helper", 2)
	fmt.Printf("%s %#x position %d\n", s.Name, s.Address, s.Pos)
	_, err := ix.Lookup("vmlinux", "helper", 0)
	fmt.Println(err)
	// Output:
	// helper 0xffffffff81000300 position 2
	// unresolvable ambiguity for symbol 'helper' in object '(null)' (2 symbols named "helper" in vmlinux; give a sympos: [1] 0xffffffff81000100 t; [2] 0xffffffff81000300 t)
}
