package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// BenchmarkGoGuestCosts prices the pieces of a Go guest's work, called
// straight through wazero: an empty export, runtime.Gosched, and one 64-byte
// allocation (with a yield every 16th call, as sdk/wasmguest does). They
// explain why a Go guest's step costs several times a C guest's.
//
//	go test -run '^$' -bench GoGuestCosts ./plugins/wasm/
func BenchmarkGoGuestCosts(b *testing.B) {
	out := filepath.Join(modDir, "gocost.wasm")
	if _, err := os.Stat(out); err != nil {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./internal/testplugins/wasm/gocost")
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building gocost: %v\n%s", err, msg)
		}
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		b.Fatal(err)
	}
	stack := make([]uint64, 1)
	for _, name := range []string{"noop", "gosched", "alloc"} {
		f := mod.ExportedFunction(name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				stack[0] = 64
				if err := f.CallWithStack(ctx, stack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
