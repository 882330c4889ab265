package suite

import (
	"encoding/base64"
	"fmt"
	"time"
)

// ClockEpoch returns the moment a class's code and tests see as "now"
// when they start: 2023-08-14 00:00:00 UTC, the week ClassEval was
// published. ClassEval's tests were written against the clock of their
// day (one class's tests expect events of January 2024 to be upcoming);
// on the real clock the same code would pass or fail depending on the day
// the suite runs. It is fixed: every program the Runner builds reads it.
func ClockEpoch() time.Time { return time.Unix(clockEpochUnix, 0).UTC() }

// clockEpochUnix is ClockEpoch in seconds since 1970.
const clockEpochUnix = 1691971200

// clockTick is how far the program's clock moves at each reading, in
// seconds: a clock that moves, so that code measuring an interval never
// divides by zero, but by a count of readings, not by the machine's
// speed, so that a test comparing two timestamps to the second passes or
// fails the same way on every run.
const clockTick = 1e-6

// clockSource is the Python that gives the program's own code a
// deterministic clock. It wraps builtins.__import__ so that `import
// datetime` and `import time` in the program's module (globals named
// __main__) return copies of those modules whose clocks read ClockEpoch
// plus clockTick per reading: datetime.datetime.now/utcnow/today,
// datetime.date.today, time.time/time_ns/localtime/gmtime/ctime/strftime.
// time.sleep, which the harnesses replace by a budget that does not sleep
// (sleepBudget), moves the same clock by the seconds asked for.
// Libraries imported by the program keep the real modules: C extensions
// (pandas) subclass the real datetime and must see it. The copies'
// datetime and date are subclasses that print, pickle and compare as the
// real ones, and whose isinstance checks accept the real ones' instances
// (a date returned by datetime.date() is a date). Time zone: UTC.
const clockSource = `def _troupe_clock(epoch, tick):
    import builtins, datetime, time, types
    now = [epoch]
    def read():
        now[0] += tick
        return now[0]
    def advance(seconds):
        now[0] += seconds
    class Meta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, cls._troupe_real)
        def __subclasscheck__(cls, sub):
            return issubclass(sub, cls._troupe_real)
    def copy(real, methods):
        ns = dict(methods, _troupe_real=real, __module__="datetime", __qualname__=real.__name__)
        return Meta("datetime." + real.__name__, (real,), ns)
    fdt = copy(datetime.datetime, {
        "now": classmethod(lambda cls, tz=None: cls.fromtimestamp(read(), tz)),
        "utcnow": classmethod(lambda cls: cls.fromtimestamp(read(), datetime.timezone.utc).replace(tzinfo=None)),
        "today": classmethod(lambda cls: cls.fromtimestamp(read())),
    })
    fd = copy(datetime.date, {"today": classmethod(lambda cls: cls.fromtimestamp(read()))})
    dmod = types.ModuleType("datetime", datetime.__doc__)
    dmod.__dict__.update({k: v for k, v in datetime.__dict__.items() if k not in ("__name__", "__doc__")})
    dmod.datetime, dmod.date = fdt, fd
    tmod = types.ModuleType("time", time.__doc__)
    tmod.__dict__.update({k: v for k, v in time.__dict__.items() if k not in ("__name__", "__doc__")})
    tmod.time = read
    tmod.time_ns = lambda: int(read() * 1e9)
    tmod.localtime = lambda s=None: time.localtime(read() if s is None else s)
    tmod.gmtime = lambda s=None: time.gmtime(read() if s is None else s)
    tmod.ctime = lambda s=None: time.ctime(read() if s is None else s)
    tmod.strftime = lambda f, t=None: time.strftime(f, tmod.localtime() if t is None else t)
    tmod._troupe_advance = advance
    copies = {"datetime": dmod, "time": tmod}
    real_import = builtins.__import__
    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        m = real_import(name, globals, locals, fromlist, level)
        if level == 0 and name in copies and globals is not None and globals.get("__name__") == "__main__":
            return copies[name]
        return m
    builtins.__import__ = import_
`

// clockLine is the first line of every program the Runner builds: one
// line, so that the class's own line numbers in a traceback move by one
// only.
var clockLine = fmt.Sprintf("exec(__import__(\"base64\").b64decode(%q).decode()); _troupe_clock(%d, %g); del _troupe_clock\n",
	base64.StdEncoding.EncodeToString([]byte(clockSource)), clockEpochUnix, clockTick)
