package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/auditstore"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// auditOptions configures `kargo-fleet audit`.
type auditOptions struct {
	kube         kubeOptions
	fleetStage   string
	since, until string
	filter       audit.Filter
	output       string
	verify       bool
	streams      genericiooptions.IOStreams
	now          func() time.Time
}

// Audit export formats.
const (
	auditText  = "text"
	auditJSONL = "jsonl"
	auditCSV   = "csv"
)

func newAuditCommand(streams genericiooptions.IOStreams, kube kubeOptions) *cobra.Command {
	o := &auditOptions{kube: kube, streams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:   "audit [FLEETSTAGE]",
		Short: "Export a fleet's audit trail: every decision, who asked for it, and whether the trail is whole",
		Long: "Prints the audit trail of a FleetStage (every FleetStage's of the namespace when none is named): " +
			"rollouts started, waves started, passed and failed, approvals, FreightPolicy blocks, refused " +
			"Promotions, break-glass, halts, rollbacks, drift and its revert, pause, resume and abort, each with " +
			"the actor, the Kubernetes identity, the Freight, the Stage and the reason. The trail outlives Events " +
			"(which the API server drops after --event-ttl) and the FleetStage itself, within the controller's " +
			"retention (--audit-retention-segments). Every export checks the trail's hash chain and says on " +
			"stderr when a record was changed or deleted; --verify prints what it checked and fails when the " +
			"trail is not whole. -o jsonl and -o csv are for auditors and spreadsheets.",
		Example: "  kargo-fleet audit prod -n shop\n" +
			"  kargo-fleet audit prod -n shop --since 24h --actor alice -o csv > audit.csv\n" +
			"  kargo-fleet audit -n shop --freight 9f8e7d6 -o jsonl\n" +
			"  kargo-fleet audit prod -n shop --verify",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFleetStages(&o.kube),
		RunE:              fleetStageRunE(&o.fleetStage, o.validate, o.run),
	}
	o.kube.addFlags(cmd, streams)
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", auditText, "Output format: text, jsonl (one JSON object a line) or csv.")
	f.StringVar(&o.since, "since", "", "Only records at or after this time: RFC 3339, or a duration back from now (24h).")
	f.StringVar(&o.until, "until", "", "Only records before this time: RFC 3339, or a duration back from now.")
	f.StringVar(&o.filter.Target, "target", "", "Only records about this target (its ID or its Stage's name).")
	f.StringVar(&o.filter.Freight, "freight", "", "Only records about this Freight (its full name).")
	f.StringVar(&o.filter.Actor, "actor", "", "Only records whose actor or Kubernetes identity contains this, ignoring case.")
	f.BoolVar(&o.verify, "verify", false, "Print what the hash chain check found, and fail when the trail is not whole.")
	return cmd
}

func (o *auditOptions) validate() error {
	if !slices.Contains([]string{auditText, auditJSONL, auditCSV}, o.output) {
		return fmt.Errorf("--output %q: use text, jsonl or csv", o.output)
	}
	var err error
	if o.filter.Since, err = o.parseTime("--since", o.since); err != nil {
		return err
	}
	o.filter.Until, err = o.parseTime("--until", o.until)
	return err
}

// parseTime reads an RFC 3339 time or a duration back from now.
func (o *auditOptions) parseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return o.now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: give an RFC 3339 time (2026-12-03T10:00:00Z) or a duration (24h)", flag, v)
	}
	return t, nil
}

func (o *auditOptions) run(ctx context.Context) error {
	c, ns, err := o.kube.connect()
	if err != nil {
		return err
	}
	segs, err := auditstore.Read(ctx, c, ns, o.fleetStage)
	if err != nil {
		return err
	}
	trails := byFleetStage(segs)
	if o.fleetStage != "" && len(trails) == 0 {
		return fmt.Errorf("FleetStage %s/%s has no audit trail (no FleetAuditSegment); the controller writes one "+
			"from its first decision about the fleet", ns, o.fleetStage)
	}
	broken := 0
	var entries []audit.Entry
	for _, name := range slices.Sorted(maps.Keys(trails)) {
		head, err := auditstore.Head(ctx, c, ns, name)
		if err != nil {
			return err
		}
		rep := audit.Verify(trails[name], head)
		if !rep.OK() {
			broken++
		}
		o.report(name, head, &rep)
		entries = append(entries, audit.Entries(trails[name])...)
	}
	if len(trails) > 1 {
		slices.SortStableFunc(entries, func(a, b audit.Entry) int { return a.Time.Compare(b.Time.Time) })
	}
	if err := o.write(o.streams.Out, entries); err != nil {
		return err
	}
	if o.verify && broken > 0 {
		return fmt.Errorf("%d of %d audit trail(s) are not whole", broken, len(trails))
	}
	return nil
}

// report says on stderr what the chain check found: always when the trail
// is broken, and what it checked with --verify.
func (o *auditOptions) report(fleetStage string, head *fleetv1alpha1.AuditHead, rep *audit.Report) {
	w := o.streams.ErrOut
	if rep.OK() {
		if o.verify {
			at := "its FleetStage is gone, so its newest records are not checked"
			if head != nil {
				at = fmt.Sprintf("it reaches record %d, the newest the controller recorded in the FleetStage's status", head.Sequence)
			}
			fmt.Fprintf(w, "audit trail of %s is whole: %d record(s), %d to %d; %s\n", fleetStage, rep.Records, rep.First, rep.Last, at)
		}
		return
	}
	fmt.Fprintf(w, "WARNING: audit trail of %s is not whole (%d record(s), %d to %d):\n", fleetStage, rep.Records, rep.First, rep.Last)
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}

func (o *auditOptions) write(w io.Writer, entries []audit.Entry) error {
	switch o.output {
	case auditJSONL:
		return audit.WriteJSONLines(w, entries, &o.filter)
	case auditCSV:
		return audit.WriteCSV(w, entries, &o.filter)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tFLEETSTAGE\tSEQ\tACTION\tACTOR\tSTAGE\tMESSAGE")
	for i := range entries {
		e := &entries[i]
		if !o.filter.Match(e) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.RFC3339), e.FleetStage, e.Sequence,
			e.Action, cellOrDash(e.Actor), cellOrDash(e.Stage), strutil.Ellipsis(strutil.OneLine(e.Message), 160))
	}
	return tw.Flush()
}

func cellOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// byFleetStage groups sorted segments by FleetStage, keeping the order.
func byFleetStage(segs []fleetv1alpha1.FleetAuditSegment) map[string][]fleetv1alpha1.FleetAuditSegment {
	out := map[string][]fleetv1alpha1.FleetAuditSegment{}
	for _, s := range segs {
		out[s.Spec.FleetStage] = append(out[s.Spec.FleetStage], s)
	}
	return out
}
