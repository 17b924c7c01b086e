package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Status is a check's verdict.
type Status string

// Check verdicts, from best to worst.
const (
	// StatusOK means the check passed.
	StatusOK Status = "ok"
	// StatusWarn means something may not work as expected; the rollout can
	// still run.
	StatusWarn Status = "warn"
	// StatusFail means a rollout will not work until the fix is applied.
	StatusFail Status = "fail"
)

// Check names, one per check.
const (
	CheckAPIServer       = "api-server"
	CheckKargoCRDs       = "kargo-crds"
	CheckFleetCRDs       = "fleet-crds"
	CheckPromotionTasks  = "promotion-tasks"
	CheckStepServer      = "step-server"
	CheckController      = "controller"
	CheckWebhook         = "webhook"
	CheckStepTokens      = "step-tokens"
	CheckArgoCDApps      = "argocd-apps"
	CheckArgoCDDest      = "argocd-destinations"
	CheckAutoPromotion   = "auto-promotion"
	CheckChangeWindows   = "change-windows"
	CheckFailureHalts    = "failure-thresholds"
	CheckShards          = "shards"
	CheckFreightCeiling  = "freight-ceiling"
	CheckBreakGlass      = "break-glass-grants"
	CheckFreightPolicy   = "freight-policy"
	maxExamplesInMessage = 3
)

// Result is the outcome of one check.
type Result struct {
	// Check names the check.
	Check string `json:"check"`
	// Status is the verdict.
	Status Status `json:"status"`
	// Message says what was found.
	Message string `json:"message"`
	// Fix says what to do when Status is not ok.
	Fix string `json:"fix,omitempty"`
}

// Report is every check's result, in the order they ran. Its JSON form is
// what `kargo-fleet doctor -o json` prints.
type Report struct {
	// Results are the checks' results.
	Results []Result `json:"results"`
	// Failed counts the failed checks; Warnings the checks that warned.
	Failed   int `json:"failed"`
	Warnings int `json:"warnings"`
}

// NewReport counts the results.
func NewReport(results []Result) Report {
	r := Report{Results: results}
	if r.Results == nil {
		r.Results = []Result{}
	}
	for _, res := range results {
		switch res.Status {
		case StatusFail:
			r.Failed++
		case StatusWarn:
			r.Warnings++
		}
	}
	return r
}

// RenderText writes one line per check: verdict, check, message and, when
// not ok, the fix; then a summary line.
func RenderText(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, res := range r.Results {
		line := fmt.Sprintf("%-4s\t%s\t%s", res.Status, res.Check, res.Message)
		if res.Status != StatusOK && res.Fix != "" {
			line += "; fix: " + res.Fix
		}
		if _, err := fmt.Fprintln(tw, line); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d checks: %d ok, %d warnings, %d failed\n", len(r.Results),
		len(r.Results)-r.Failed-r.Warnings, r.Warnings, r.Failed)
	return err
}

// RenderJSON writes the report as indented JSON.
func RenderJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// examples joins the first few items and says how many more there are.
func examples(items []string) string {
	if len(items) <= maxExamplesInMessage {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxExamplesInMessage], ", "), len(items)-maxExamplesInMessage)
}

func ok(check, format string, args ...any) Result {
	return Result{Check: check, Status: StatusOK, Message: fmt.Sprintf(format, args...)}
}

func warn(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: StatusWarn, Message: fmt.Sprintf(format, args...), Fix: fix}
}

func fail(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: StatusFail, Message: fmt.Sprintf(format, args...), Fix: fix}
}
