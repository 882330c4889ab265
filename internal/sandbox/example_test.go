package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-dev/troupe/internal/sandbox"
)

func Example() {
	// CPUTime above WallTimeout, so the endless loop below is stopped by
	// the wall clock (with the default, CPUTime = WallTimeout, whichever
	// limit comes first stops it: "timeout" or "cpu_limit").
	sb, err := sandbox.New(sandbox.Config{WallTimeout: time.Second, CPUTime: 3 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	prog := sandbox.Program{
		TaskID: "demo",
		Code:   "def add(a, b):\n    return a + b\n",
		Test:   "assert add(2, 3) == 5\nprint('ok')\n",
	}
	r, err := sb.Run(context.Background(), prog)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(r.Stdout)
	fmt.Println(r.Describe(), r.Cached)
	r, _ = sb.Run(context.Background(), prog) // the same code and tests: cached
	fmt.Println(r.Describe(), r.Cached)
	r, _ = sb.Run(context.Background(), sandbox.Program{Code: "while True:\n    pass\n"})
	fmt.Println(r.Describe())
	// Output:
	// ok
	// exit 0 false
	// exit 0 true
	// timeout
}
