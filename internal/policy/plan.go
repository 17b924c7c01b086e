package policy

import (
	"slices"

	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// CheckPlan checks freight against every member of p and returns the
// verdicts of the blocked members by target ID; nil when none is blocked.
// sigs are the verifications of the Freight's images (see Check). The
// rollout controller, `kargo-fleet plan` and `doctor` all call it.
func CheckPlan(policies []*Compiled, freight *Freight, sigs Signatures, p *plan.WavePlan) map[string]Verdict {
	if len(policies) == 0 {
		return nil
	}
	var out map[string]Verdict
	var k Checker
	for i := range p.Waves {
		for j := range p.Waves[i].Members {
			t := TargetOf(&p.Waves[i].Members[j])
			if v := k.Check(policies, freight, sigs, &t); !v.Allowed() {
				if out == nil {
					out = map[string]Verdict{}
				}
				out[t.ID] = v
			}
		}
	}
	return out
}

// WaveBlocks are the blocked members of one wave, grouped by what blocks
// them.
type WaveBlocks struct {
	Wave string `json:"wave"`
	// Hold says the wave cannot pass while they are blocked.
	Hold   bool         `json:"hold"`
	Groups []BlockGroup `json:"groups"`
}

// BlockGroup is the targets the same rules block.
type BlockGroup struct {
	// Rules reads as Verdict.String.
	Rules   string   `json:"rules"`
	Targets []string `json:"targets"`
}

// Summarize groups the blocked members of p (CheckPlan's verdicts) by
// wave, in wave order, and by rules, in order of first member.
func Summarize(p *plan.WavePlan, blocked map[string]Verdict) []WaveBlocks {
	var out []WaveBlocks
	for i := range p.Waves {
		w := WaveBlocks{Wave: p.Waves[i].Name}
		for j := range p.Waves[i].Members {
			t := &p.Waves[i].Members[j]
			v, ok := blocked[t.ID]
			if !ok {
				continue
			}
			w.Hold = w.Hold || v.Hold()
			rules := v.String()
			at := slices.IndexFunc(w.Groups, func(g BlockGroup) bool { return g.Rules == rules })
			if at < 0 {
				w.Groups = append(w.Groups, BlockGroup{Rules: rules})
				at = len(w.Groups) - 1
			}
			w.Groups[at].Targets = append(w.Groups[at].Targets, t.Name)
		}
		if len(w.Groups) > 0 {
			out = append(out, w)
		}
	}
	return out
}
