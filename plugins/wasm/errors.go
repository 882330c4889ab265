package wasm

import (
	"fmt"
	"strings"
)

// CallError reports a failed call into a plugin module: a trap, an exit, a
// timeout, a malformed reply, or an error the guest returned.
type CallError struct {
	// Module is the module's file name.
	Module string
	// Call names the ABI call ("reset", "step", "score", …).
	Call string
	// Code is the guest's negative error code, or 0 when the host detected
	// the failure (trap, exit, timeout, malformed reply).
	Code int32
	// Reason says what went wrong.
	Reason string
	// Discarded reports that the instance was closed; the next Reset of the
	// same env starts a new one.
	Discarded bool
	// Err is the underlying runtime error, if any.
	Err error
}

// Error names the module, the call and what went wrong.
func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wasm module %s: %s: %s", e.Module, e.Call, e.Reason)
	if e.Discarded {
		b.WriteString(" (instance discarded)")
	}
	return b.String()
}

// Unwrap returns the underlying runtime error.
func (e *CallError) Unwrap() error { return e.Err }

// ABIError reports a module that does not speak the host's ABI version. It
// is detected from the compiled module's exports before any guest code runs.
type ABIError struct {
	// Module is the module's file name.
	Module string
	// Have lists the versions the module declares (troupe_abi_vN exports);
	// empty when it declares none.
	Have []int
	// Want is the version the host speaks.
	Want int
}

// Error says which ABI versions the module and the host speak.
func (e *ABIError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("wasm module %s: not a troupe plugin: it exports no troupe_abi_vN marker (this host speaks ABI version %d and needs the export troupe_abi_v%d)", e.Module, e.Want, e.Want)
	}
	vs := make([]string, len(e.Have))
	for i, v := range e.Have {
		vs[i] = fmt.Sprint(v)
	}
	return fmt.Sprintf("wasm module %s: ABI version mismatch: the module speaks troupe ABI version %s, this host speaks version %d", e.Module, strings.Join(vs, ", "), e.Want)
}
