package conditions

// Failure is why a reconcile pass could not converge: a reason of this
// package and a human message. Messages never hold values that change from
// pass to pass, so an unchanged failure writes no status.
type Failure struct {
	Reason  string
	Message string
}

func (f *Failure) Error() string { return f.Reason + ": " + f.Message }
