package serve

import (
	"io"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newHCLogHandler returns a slog handler writing hclog's JSON line format
// ("@level", "@message", "@timestamp" and the attributes), which the host
// reads back with each record's level and attributes.
func newHCLogHandler(w io.Writer, level hclog.Level) slog.Handler {
	floor := slog.LevelInfo
	switch level {
	case hclog.Trace:
		floor = slog.LevelDebug - 4
	case hclog.Debug:
		floor = slog.LevelDebug
	case hclog.Warn:
		floor = slog.LevelWarn
	case hclog.Error:
		floor = slog.LevelError
	}
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: floor,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format("2006-01-02T15:04:05.000000Z07:00"))
			case slog.LevelKey:
				return slog.String("@level", levelName(a.Value.Any().(slog.Level)))
			case slog.MessageKey:
				return slog.String("@message", a.Value.String())
			}
			return a
		},
	})
}

// levelName is hclog's name for a slog level.
func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	default:
		return "error"
	}
}
