package grpcplugin

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A message-size refusal (RESOURCE_EXHAUSTED, e.g. from a plugin built with
// an older serve kit that kept gRPC's 4 MiB receive limit) fails the call but
// leaves the healthy process running; it is not reported as an exit.
func TestResourceExhaustedKeepsProcess(t *testing.T) {
	noLeftovers(t)
	cfg, err := newPluginConfig("reward", ref(bin.faulty, nil), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(cfg, RewardPluginName)
	if err != nil {
		t.Fatal(err)
	}
	defer p.kill(false)
	err, broken := p.callFailure("Score", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (6291480 vs. 4194304)"))
	if broken || errors.Is(err, ErrExited) || !alive(p.pid) {
		t.Errorf("callFailure = %v, broken %v, process alive %v; want a plain error and the process kept", err, broken, alive(p.pid))
	}
	for _, w := range []string{bin.faulty, "Score", "larger than max"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
