package demo

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// stepResult is how one expectation went.
type stepResult struct {
	title  string
	detail string
	took   time.Duration
	err    error
}

// banner says what runs, and that Kargo is simulated.
func (s *story) banner() {
	lines := []string{
		s.title(),
		"",
		"  control plane    kube-apiserver and etcd on this machine (envtest)",
		"  Kargo            the KARGO SIMULATOR (internal/kargosim) stands in for Kargo: real Promotions,",
		"                   webhooks, http steps and auto-promotion; other steps are simulated",
		"  kargo-fleet      the FleetStage and FleetRollout controllers and the step server, in this process",
	}
	if s.analysisOn() {
		lines = append(lines, "  Prometheus       a real one on this machine, scraping the request counters the Kargo simulator serves per target")
	}
	if s.dash != nil && s.dash.ln != nil {
		lines = append(lines, "  dashboard        "+s.dash.url+" (read-only, live)")
	}
	if s.o.LogFile != "" {
		lines = append(lines, "  logs             "+s.o.LogFile+" (Kargo simulator lines are named \"kargo-simulator\")")
	}
	if s.skipAnalysis != "" {
		lines = append(lines, "  note             "+s.skipAnalysis)
	}
	lines = append(lines, "")
	fmt.Fprintln(s.out, strings.Join(lines, "\n"))
}

// title names what the story shows.
func (s *story) title() string {
	if s.analysisOn() {
		return "kargo-fleet demo: one fleet, three Freight, four waves, an error-rate gate"
	}
	return "kargo-fleet demo: one fleet, two Freight, four waves"
}

// printStep prints one expectation's result as it completes.
func (s *story) printStep(n int, r stepResult) {
	mark := "ok"
	if r.err != nil {
		mark = "FAILED"
	}
	fmt.Fprintf(s.out, "\n[%d] %s: %s (%s)\n", n, mark, r.title, formatTook(r.took))
	if r.detail != "" {
		fmt.Fprintf(s.out, "    %s\n", r.detail)
	}
	if r.err != nil {
		fmt.Fprintf(s.out, "    %v\n", r.err)
	}
	fmt.Fprintln(s.out)
}

// summary prints every expectation with its result, and the verdict.
func (s *story) summary(runErr error) {
	writeSummary(s.out, s.steps, s.o.Clock.Since(s.start), runErr)
}

// writeSummary renders the summary table.
func writeSummary(w io.Writer, steps []stepResult, total time.Duration, runErr error) {
	fmt.Fprintln(w, "Summary")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tEXPECTATION\tRESULT\tTIME")
	for i, r := range steps {
		res := "ok"
		if r.err != nil {
			res = "FAILED"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", i+1, r.title, res, formatTook(r.took))
	}
	_ = tw.Flush()
	switch {
	case runErr == nil:
		fmt.Fprintf(w, "\nThe story happened as told, in %s.\n", formatTook(total))
	case errors.Is(runErr, ErrStoryBroken) && len(steps) > 0:
		last := steps[len(steps)-1]
		fmt.Fprintf(w, "\nThe demo stopped at expectation %d after %s: %s\n  %v\n", len(steps), formatTook(total),
			last.title, last.err)
	default:
		fmt.Fprintf(w, "\nThe demo stopped after %s: %v\n", formatTook(total), runErr)
	}
}

func formatTook(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
