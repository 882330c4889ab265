package suite

import (
	"context"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/internal/sandbox"
)

// TestClockIsDeterministic runs a program that reads the clock every way
// ClassEval's classes do, with the line every Runner program starts with:
// its code reads ClockEpoch, its clock moves by readings and by the
// budgeted sleeps, and the copies print and compare as the real classes.
// A C extension that subclasses the real datetime (pandas) still imports.
func TestClockIsDeterministic(t *testing.T) {
	r := newRunner(t)
	needModules(t, r, "pandas")
	code := `import datetime, time
from datetime import datetime as DT, date, timedelta
from time import sleep
print(DT.now().strftime("%Y-%m-%d %H:%M:%S"), date.today(), datetime.date.today().isoformat())
print(repr(DT(2024, 1, 2)), repr(date(2024, 1, 2)), str([DT(2024, 1, 2)]))
a = time.time(); b = time.time()
print(0 < b - a < 1e-3, time.strftime("%Y"), time.localtime().tm_year, time.gmtime().tm_mon)
d = DT.now().date()
print(isinstance(d, date), isinstance(DT.now(), DT), type(DT.now() + timedelta(days=1)).__name__)
print(DT.strptime("2023-01-01", "%Y-%m-%d") < DT.now(), DT.utcnow().year)
`
	test := `_LIMIT = 5.0
class _Timeout(BaseException):
    pass
` + strings.ReplaceAll(sleepBudget, "%%", "%") + `t0 = time.time()
sleep(3)
print(round(time.time() - t0))
import pandas
print(pandas.Timestamp(DT.now()).year)
`
	want := "2023-08-14 00:00:00 2023-08-14 2023-08-14\n" +
		"datetime.datetime(2024, 1, 2, 0, 0) datetime.date(2024, 1, 2) [datetime.datetime(2024, 1, 2, 0, 0)]\n" +
		"True 2023 2023 8\n" +
		"True True datetime.datetime\n" +
		"True 2023\n" +
		"3\n" + // the budgeted sleep moved the clock
		"2023\n"
	res, err := r.sb.Run(context.Background(), sandbox.Program{TaskID: "clock", Code: clockLine + code, Test: test, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Fatalf("program failed: %s\n%s", res.Stderr, res.Stdout)
	}
	if res.Stdout != want {
		t.Errorf("clock program printed\n%s\nwant\n%s", res.Stdout, want)
	}
}
