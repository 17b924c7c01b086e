package cli

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// ExitError ends the command with Code instead of 1.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// runWait follows one rollout until it ends or --timeout passes, printing
// a time-stamped line whenever it moves: plain lines, no terminal control
// codes, so CI logs read well.
func (o *statusOptions) runWait(ctx context.Context, c client.Client, ns string) error {
	deadline := o.clock.Now().Add(o.timeout)
	ticker := o.clock.NewTicker(o.interval)
	defer ticker.Stop()
	w := report.WaitFor{Freight: o.freight, ThroughApprovals: o.waitApprovals}
	last := ""
	for {
		fs, err := getFleetStage(ctx, c, ns, o.fleetStage)
		if err != nil {
			return err
		}
		rollouts, err := listRollouts(ctx, c, fs)
		if err != nil {
			return err
		}
		st := report.Wait(fs, rollouts, w)
		if st.Line != last {
			fmt.Fprintf(o.streams.Out, "%s %s\n", o.clock.Now().UTC().Format("15:04:05"), st.Line)
			last = st.Line
		}
		if st.Done {
			if st.Code == report.ExitSucceeded {
				return nil
			}
			return &ExitError{Code: st.Code, Err: fmt.Errorf("rollout %s did not succeed: %s", st.Rollout, st.Line)}
		}
		if !o.clock.Now().Before(deadline) {
			return &ExitError{Code: report.ExitTimedOut, Err: fmt.Errorf("timed out after %s: %s", o.timeout, st.Line)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
		}
	}
}
