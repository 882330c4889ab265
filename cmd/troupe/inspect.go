package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/troupe-dev/troupe/plugins/wasm"
)

func init() {
	commands["inspect"] = command{"show a Wasm plugin's spec, ABI version, imports and size", runInspect}
}

// parseInterleaved parses flags that may come before or after positional
// arguments and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("inspect", "inspect [--json] MODULE.wasm", stdout, stderr)
	asJSON := fs.Bool("json", false, "print the description as one JSON object")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintln(fs.Output(), "troupe inspect: want exactly one module file")
		fs.Usage()
		return exitUsage
	}
	info, err := wasm.Inspect(ctx, pos[0])
	if info.Size > 0 || err == nil {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.Encode(info)
		} else {
			printInfo(stdout, info)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "troupe inspect:", err)
		var ae *wasm.ABIError
		if errors.As(err, &ae) || errors.Is(err, os.ErrNotExist) || errors.Is(err, wasm.ErrNotWasm) {
			return exitUsage
		}
		return exitRuntime
	}
	return exitOK
}

func printInfo(w io.Writer, info wasm.Info) {
	row := func(k, v string) { fmt.Fprintf(w, "%-13s %s\n", k, v) }
	row("module", fmt.Sprintf("%s (%s, sha256 %s)", info.Path, sizeString(info.Size), info.SHA256))
	abi := "none (not a troupe plugin)"
	if info.ABIVersion > 0 {
		abi = fmt.Sprintf("v%d", info.ABIVersion)
	}
	row("abi", fmt.Sprintf("%s (this host speaks v%d)", abi, info.HostABIVersion))
	if e := info.Env; e != nil {
		row("env", fmt.Sprintf("%s: %d agents (%s), obs_size %d, state_size %d, max_steps %d",
			e.Name, len(e.Agents), strings.Join(e.Agents, ", "), e.ObsSize, e.StateSize, e.MaxSteps))
		var ds []string
		for _, d := range e.Decisions {
			s := d.Name
			if d.NeedsText {
				s += " (text)"
			}
			ds = append(ds, s)
		}
		row("decisions", strings.Join(ds, ", "))
		if e.StepRewards {
			row("step rewards", "yes")
		}
		if len(e.Metrics) > 0 {
			row("metrics", strings.Join(e.Metrics, ", "))
		}
		if len(e.Baselines) > 0 {
			row("baselines", strings.Join(e.Baselines, ", "))
		}
		caps := "none"
		if len(info.Capabilities) > 0 {
			caps = strings.Join(info.Capabilities, ", ")
		}
		row("capabilities", caps)
	}
	if r := info.Reward; r != nil {
		row("reward", fmt.Sprintf("%s: components %s", r.Name, strings.Join(r.Components, ", ")))
	}
	// Imports, grouped by module.
	var mods []string
	byMod := map[string][]string{}
	for _, imp := range info.Imports {
		mod, name, _ := strings.Cut(imp, ".")
		if byMod[mod] == nil {
			mods = append(mods, mod)
		}
		byMod[mod] = append(byMod[mod], name)
	}
	if len(mods) == 0 {
		row("imports", "none")
	}
	for _, mod := range mods {
		row("imports", mod+": "+strings.Join(byMod[mod], ", "))
	}
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
