package cluster

// SetAfterWrite sets the hook called after a worker writes a result;
// returning false skips the ack, as a worker killed there would.
func SetAfterWrite(w *Worker, f func(Job) bool) { w.afterWrite = f }

// SetBeforeWrite sets the hook called before a worker writes a result;
// returning false drops the job there (no result, no ack).
func SetBeforeWrite(w *Worker, f func(Job) bool) { w.beforeWrite = f }
