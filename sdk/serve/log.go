package serve

import (
	"io"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogHandler returns a slog handler writing hclog's JSON line format
// ("@level", "@message", "@timestamp" and the attributes), which the host
// reads back with each record's level and attributes.
func newHCLogHandler(w io.Writer, level hclog.Level) slog.Handler {
	min := slog.LevelInfo
	switch level {
	case hclog.Trace, hclog.Debug:
		min = slog.LevelDebug
	case hclog.Warn:
		min = slog.LevelWarn
	case hclog.Error:
		min = slog.LevelError
	}
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: min,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
			case slog.LevelKey:
				return slog.String("@level", strings.ToLower(a.Value.Any().(slog.Level).String()))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	})
}

