package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Capabilities is a set of the optional interfaces an env implements:
// [Truncater], [Prompter], [Simulator] and [BaselineProvider]. An env
// declares its set in [EnvSpec].Capabilities, and the runtime finds an
// optional interface only through that declaration ([TruncaterOf],
// [PrompterOf], [SimulatorOf], [BaselineProviderOf]): implementing the
// method is not enough. So one env type can carry every optional method
// and still offer only some of them, as the plugin hosts' envs do for
// whatever their plugin implements. An env written in Go declares every
// optional interface it implements: the loaders of Go envs report one it
// leaves out ([CheckUndeclared]).
type Capabilities uint8

// The capabilities, one per optional interface.
const (
	// CapTruncate: the env is a [Truncater].
	CapTruncate Capabilities = 1 << iota
	// CapPrompt: the env is a [Prompter].
	CapPrompt
	// CapSimulate: the env is a [Simulator].
	CapSimulate
	// CapBaseline: the env is a [BaselineProvider].
	CapBaseline

	allCapabilities = CapTruncate | CapPrompt | CapSimulate | CapBaseline
)

// capabilityNames are the capabilities' names in the plugin ABIs, in bit
// order.
var capabilityNames = [...]string{"truncate", "prompt", "simulate", "baseline"}

// Has reports whether c holds every capability in x.
func (c Capabilities) Has(x Capabilities) bool { return c&x == x }

// Names returns the names of the capabilities in c, as the plugin ABIs
// spell them ("truncate", "prompt", "simulate", "baseline"), in that order.
func (c Capabilities) Names() []string {
	var out []string
	for i, n := range capabilityNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// String returns the names joined by "|", or "none".
func (c Capabilities) String() string {
	if c == 0 {
		return "none"
	}
	s := strings.Join(c.Names(), "|")
	if c&^allCapabilities != 0 {
		s += fmt.Sprintf("|%#x", uint8(c&^allCapabilities))
	}
	return strings.TrimPrefix(s, "|")
}

// ParseCapabilities returns the set of the named capabilities (see
// [Capabilities.Names]); an unknown name is an error.
func ParseCapabilities(names []string) (Capabilities, error) {
	var c Capabilities
	for _, n := range names {
		i := slices.Index(capabilityNames[:], n)
		if i < 0 {
			return 0, fmt.Errorf("unknown capability %q (have %s)", n, strings.Join(capabilityNames[:], ", "))
		}
		c |= 1 << i
	}
	return c, nil
}

// TruncaterOf returns e as a [Truncater] if its spec declares
// [CapTruncate].
func TruncaterOf(e Env) (Truncater, bool) { return declared[Truncater](e, CapTruncate) }

// PrompterOf returns e as a [Prompter] if its spec declares [CapPrompt].
func PrompterOf(e Env) (Prompter, bool) { return declared[Prompter](e, CapPrompt) }

// SimulatorOf returns e as a [Simulator] if its spec declares
// [CapSimulate].
func SimulatorOf(e Env) (Simulator, bool) { return declared[Simulator](e, CapSimulate) }

// BaselineProviderOf returns e as a [BaselineProvider] if its spec
// declares [CapBaseline].
func BaselineProviderOf(e Env) (BaselineProvider, bool) {
	return declared[BaselineProvider](e, CapBaseline)
}

func declared[T any](e Env, c Capabilities) (T, bool) {
	if !e.Spec().Capabilities.Has(c) {
		var zero T
		return zero, false
	}
	t, ok := e.(T)
	return t, ok
}

// optionalInterfaces pairs each capability with the optional interface it
// declares, in bit order.
var optionalInterfaces = [...]struct {
	cap        Capabilities
	constName  string // the capability's Go name
	iface      string // the interface's Go name
	implements func(Env) bool
}{
	{CapTruncate, "core.CapTruncate", "core.Truncater", is[Truncater]},
	{CapPrompt, "core.CapPrompt", "core.Prompter", is[Prompter]},
	{CapSimulate, "core.CapSimulate", "core.Simulator", is[Simulator]},
	{CapBaseline, "core.CapBaseline", "core.BaselineProvider", is[BaselineProvider]},
}

// CheckCapabilities reports a capability that e's spec declares but e
// does not implement. It holds for every env, the plugin hosts' included.
func CheckCapabilities(e Env) error {
	spec := e.Spec()
	for _, o := range optionalInterfaces {
		if spec.Capabilities.Has(o.cap) && !o.implements(e) {
			return fmt.Errorf("env %s: the spec declares capability %s, but %T does not implement %s", spec.Name, o.cap, e, o.iface)
		}
	}
	return nil
}

// CheckUndeclared reports the optional interfaces that e implements but
// its spec does not declare, which the runtime would silently ignore. It
// is for envs written in Go, whose methods are their own: [NewEnvSource]
// and the plugin kits (sdk/wasmguest, sdk/serve) apply it. It does not
// hold for the plugin hosts' envs, which carry every optional method by
// design and declare only what their plugin offers.
func CheckUndeclared(e Env) error {
	spec := e.Spec()
	var errs []error
	for _, o := range optionalInterfaces {
		if !spec.Capabilities.Has(o.cap) && o.implements(e) {
			errs = append(errs, fmt.Errorf("env %s implements %s but its spec does not declare %s; add it to EnvSpec.Capabilities", spec.Name, o.iface, o.constName))
		}
	}
	return errors.Join(errs...)
}

func is[T any](e Env) bool { _, ok := e.(T); return ok }
