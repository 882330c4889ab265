package telemetry

import (
	"cmp"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/troupe-dev/troupe/core"
)

// The exporters of [Config.Exporter].
const (
	// ExporterNone exports nothing and costs nothing: no span is made.
	ExporterNone = "none"
	// ExporterStdout writes spans and metrics as JSON to standard output.
	ExporterStdout = "stdout"
	// ExporterOTLP sends spans and metrics to an OTLP endpoint (a
	// collector, Jaeger, Grafana Tempo, Langfuse …).
	ExporterOTLP = "otlp"
)

// The protocols of [Config.Protocol], named as OTEL_EXPORTER_OTLP_PROTOCOL
// names them.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is the agentfile's [telemetry] table: where a run's traces and
// metrics go. The standard OTEL_* environment variables fill what it
// leaves unset (see the fields).
type Config struct {
	// Exporter is "none" (the default: no spans, no metrics, no cost),
	// "stdout" or "otlp".
	Exporter string `toml:"exporter"`
	// Protocol is the OTLP protocol, "http/protobuf" or "grpc"; "" (the
	// default) takes $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
	// $OTEL_EXPORTER_OTLP_PROTOCOL, else "http/protobuf".
	Protocol string `toml:"protocol"`
	// Endpoint is the OTLP endpoint URL, e.g. "http://localhost:4318"
	// (an http:// URL sends without TLS); "" (the default) leaves it to
	// $OTEL_EXPORTER_OTLP_ENDPOINT and the exporter's default
	// (localhost:4318 for HTTP, localhost:4317 for gRPC). Headers, TLS
	// and timeouts come from the other OTEL_EXPORTER_OTLP_* variables.
	Endpoint string `toml:"endpoint"`
	// ServiceName is the service.name of the run's resource; "" (the
	// default) takes $OTEL_SERVICE_NAME, else "troupe".
	ServiceName string `toml:"service_name"`
	// CaptureContent adds the prompts and completions to the chat spans
	// (gen_ai.input.messages, gen_ai.output.messages). Off by default:
	// they can hold secrets.
	CaptureContent bool `toml:"capture_content"`
	// Prometheus, when set, is the address ("localhost:9464", ":9464")
	// where the metrics are served in the Prometheus format at /metrics,
	// for those who scrape; with the exporter "none" it is metrics only.
	// "" (the default) serves none.
	Prometheus string `toml:"prometheus"`
	// Output is where the stdout exporter writes, chosen by the program,
	// not the agentfile: troupe train writes to the run directory's
	// telemetry.jsonl, eval and run to stderr, so that the JSON is not
	// mixed into what the terminal shows. Nil is os.Stdout.
	Output io.Writer `toml:"-"`
}

// off reports whether c makes no spans and no metrics.
func (c Config) off() bool { return c.Exporter == ExporterNone && c.Prometheus == "" }

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config { return Config{Exporter: ExporterNone} }

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch c.Exporter {
	case ExporterNone, ExporterStdout, ExporterOTLP:
	default:
		return core.NewSettingError("exporter", "must be %q, %q or %q, got %q", ExporterNone, ExporterStdout, ExporterOTLP, c.Exporter)
	}
	switch c.Protocol {
	case "", ProtocolHTTP, ProtocolGRPC:
	default:
		return core.NewSettingError("protocol", "must be %q or %q (or empty for $OTEL_EXPORTER_OTLP_PROTOCOL), got %q", ProtocolHTTP, ProtocolGRPC, c.Protocol)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return core.NewSettingError("endpoint", "must be an http:// or https:// URL such as \"http://localhost:4318\", got %q", c.Endpoint)
		}
	}
	if c.Prometheus != "" {
		if _, _, err := net.SplitHostPort(c.Prometheus); err != nil {
			return core.NewSettingError("prometheus", "must be a listen address such as \"localhost:9464\" or \":9464\", got %q", c.Prometheus)
		}
	}
	if c.Exporter != ExporterOTLP && (c.Protocol != "" || c.Endpoint != "") {
		return core.NewSettingError("exporter", "protocol and endpoint apply to the otlp exporter, not %q", c.Exporter)
	}
	return nil
}

// protocol returns the OTLP protocol in force: Protocol, else the
// environment's, else http/protobuf.
func (c Config) protocol() (string, error) {
	if c.Protocol != "" {
		return c.Protocol, nil
	}
	env := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	switch p := strings.TrimSpace(env); p {
	case "":
		return ProtocolHTTP, nil
	case ProtocolHTTP, ProtocolGRPC:
		return p, nil
	default:
		return "", core.NewSettingError("protocol", "$OTEL_EXPORTER_OTLP_PROTOCOL is %q; troupe sends %q or %q", p, ProtocolHTTP, ProtocolGRPC)
	}
}

// serviceName returns the service.name in force.
func (c Config) serviceName() string {
	return cmp.Or(c.ServiceName, os.Getenv("OTEL_SERVICE_NAME"), "troupe")
}
