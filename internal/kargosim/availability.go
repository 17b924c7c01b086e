package kargosim

import (
	"slices"
	"strings"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Availability strategies of a Freight request's sources.
const (
	availabilityOneOf = "OneOf"
	availabilityAll   = "All"
)

// freightAvailable judges, as Kargo's Stage.IsFreightAvailable does, whether
// the Freight may be promoted to the Stage at now: it is approved for the
// Stage, or the Stage takes its origin directly, or it was verified (and has
// soaked long enough) in one upstream Stage (all of them with strategy All).
func freightAvailable(stage *kargo.Stage, freight *kargo.Freight, now time.Time) bool {
	if stage == nil || freight == nil || stage.Namespace != freight.Namespace {
		return false
	}
	for _, req := range stage.Spec.RequestedFreight {
		if req.Origin != freight.Origin {
			continue
		}
		if freight.IsApprovedFor(stage.Name) || req.Sources.Direct {
			return true
		}
		if req.Sources.AvailabilityStrategy == availabilityAll {
			if len(req.Sources.Stages) == 0 {
				return true
			}
			all := true
			for _, up := range req.Sources.Stages {
				if !verifiedAndSoaked(freight, up, req.Sources, now) {
					all = false
					break
				}
			}
			if all {
				return true
			}
			continue
		}
		for _, up := range req.Sources.Stages {
			if verifiedAndSoaked(freight, up, req.Sources, now) {
				return true
			}
		}
	}
	return false
}

// verifiedAndSoaked reports whether the Freight was verified in the upstream
// Stage and, when the sources ask for a soak time, has soaked there for it.
func verifiedAndSoaked(freight *kargo.Freight, upstream string, src kargo.FreightSources, now time.Time) bool {
	if !freight.IsVerifiedIn(upstream) {
		return false
	}
	if src.RequiredSoakTime == nil {
		return true
	}
	return longestSoak(freight, upstream, now) >= src.RequiredSoakTime.Duration
}

// longestSoak is the longest time the Freight has stayed in the Stage after
// being verified there: the longest completed stay on record or, while it is
// still there, the current stay.
func longestSoak(freight *kargo.Freight, stage string, now time.Time) time.Duration {
	v, ok := freight.Status.VerifiedIn[stage]
	if !ok {
		return 0
	}
	var longest time.Duration
	if v.LongestSoak != nil {
		longest = v.LongestSoak.Duration
	}
	if cur, ok := freight.Status.CurrentlyIn[stage]; ok && cur.Since != nil {
		longest = max(longest, now.Sub(cur.Since.Time))
	}
	return longest
}

// soakRemaining is how long until the Freight has soaked long enough in some
// upstream Stage for the request, or 0 when no wait would help (already
// available, no soak time, or not verified upstream at all).
func soakRemaining(req kargo.FreightRequest, freight *kargo.Freight, now time.Time) time.Duration {
	if req.Sources.RequiredSoakTime == nil {
		return 0
	}
	var best time.Duration
	for _, up := range req.Sources.Stages {
		if !freight.IsVerifiedIn(up) {
			continue
		}
		if _, in := freight.Status.CurrentlyIn[up]; !in {
			continue
		}
		left := req.Sources.RequiredSoakTime.Duration - longestSoak(freight, up, now)
		if left > 0 && (best == 0 || left < best) {
			best = left
		}
	}
	return best
}

// availableFreight filters the project's Freight to what is available to the
// Stage, the way Kargo lists it for auto-promotion: with the MatchUpstream
// selection policy only Freight currently in the (single) upstream Stage
// counts, unless the request takes Freight directly.
func availableFreight(stage *kargo.Stage, all []kargo.Freight, now time.Time) []kargo.Freight {
	var out []kargo.Freight
	for i := range all {
		f := &all[i]
		for _, req := range stage.Spec.RequestedFreight {
			if req.Origin != f.Origin {
				continue
			}
			if matchUpstream(req) && !req.Sources.Direct {
				if _, in := f.Status.CurrentlyIn[req.Sources.Stages[0]]; !in {
					continue
				}
			}
			if freightAvailable(stage, f, now) {
				out = append(out, *f)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b kargo.Freight) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// matchUpstream reports whether the request auto-promotes with the
// MatchUpstream selection policy (which needs exactly one upstream Stage).
func matchUpstream(req kargo.FreightRequest) bool {
	return req.Sources.AutoPromotionOptions != nil &&
		req.Sources.AutoPromotionOptions.SelectionPolicy == kargo.SelectionMatchUpstream &&
		len(req.Sources.Stages) > 0
}

// autoPromotionCandidates picks, per requested origin key, the Freight that
// auto-promotion would promote: the newest available (by discovery time, then
// name). With MatchUpstream, more than one available Freight means the
// upstream Stage is mid-change, and the origin has no candidate for now.
func autoPromotionCandidates(stage *kargo.Stage, available []kargo.Freight) map[string]kargo.Freight {
	byOrigin := map[string][]kargo.Freight{}
	for _, f := range available {
		byOrigin[f.Origin.Key()] = append(byOrigin[f.Origin.Key()], f)
	}
	out := map[string]kargo.Freight{}
	for _, req := range stage.Spec.RequestedFreight {
		key := req.Origin.Key()
		fs := byOrigin[key]
		if len(fs) == 0 || (matchUpstream(req) && len(fs) > 1) {
			continue
		}
		slices.SortFunc(fs, func(a, b kargo.Freight) int {
			if c := discoveredAt(b).Compare(discoveredAt(a)); c != 0 {
				return c
			}
			return strings.Compare(b.Name, a.Name)
		})
		out[key] = fs[0]
	}
	return out
}

// discoveredAt is when the Freight's artifacts were discovered, falling back
// to its creation time.
func discoveredAt(f kargo.Freight) time.Time {
	if f.DiscoveredAt != nil {
		return f.DiscoveredAt.Time
	}
	return f.CreationTimestamp.Time
}
