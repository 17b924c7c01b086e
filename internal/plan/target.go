package plan

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// Target is one member of the fleet, whatever inventory it came from.
type Target struct {
	// ID is the fleet-unique, stable key of the target: it orders the target in
	// count-capped waves, keys in-flight and done sets, and is what target Stage
	// names are derived from. Inventory readers set it with TargetID(Name).
	ID string `json:"id"`
	// Name is the target's name as its inventory spells it.
	Name string `json:"name"`
	// Source is the inventory kind the target came from (ArgoCDCluster,
	// KargoTarget, ClusterProfile or Inline).
	Source string `json:"source"`
	// Labels classify the target for selection, waves, windows and constraints.
	Labels map[string]string `json:"labels,omitempty"`
	// Params are the target's data, passed to its Stage as variables.
	Params map[string]string `json:"params,omitempty"`
	// Shard is the Kargo shard of the target's Stage, resolved by the
	// planner from spec.shards ("" is Kargo's default controller).
	// Inventories leave it empty.
	Shard string `json:"shard,omitempty"`
}

// maxTargetIDLength keeps IDs usable as label values (63 characters).
const maxTargetIDLength = 63

// TargetID derives a target's ID from its name: lower case, every character
// outside [a-z0-9-] replaced by '-', runs of '-' collapsed and trimmed. IDs
// longer than 63 characters are cut and suffixed with a hash of the full name
// so that they stay distinct and fit in a label value. A name that leaves
// nothing (e.g. "___") becomes "t-<hash>".
func TargetID(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if id == "" {
		return "t-" + shortNameHash(name)
	}
	if len(id) > maxTargetIDLength {
		suffix := shortNameHash(name)
		id = strings.TrimRight(id[:maxTargetIDLength-len(suffix)-1], "-") + "-" + suffix
	}
	return id
}

// shortNameHash is 8 hex digits identifying name.
func shortNameHash(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// TeamSet is the set of teams whose targets a Project may select. A nil
// TeamSet means no team scoping; an empty non-nil one allows no target.
type TeamSet map[string]struct{}

// ParseAllowedTeams reads the value of the AllowedTeamsAnnotation of a Project
// namespace. present says whether the annotation exists: without it there is
// no scoping (nil). Teams are comma separated; blanks are ignored, so an
// annotation holding only blanks allows no target.
func ParseAllowedTeams(value string, present bool) TeamSet {
	if !present {
		return nil
	}
	teams := TeamSet{}
	for team := range strings.SplitSeq(value, ",") {
		if team = strings.TrimSpace(team); team != "" {
			teams[team] = struct{}{}
		}
	}
	return teams
}

// Has says whether team is allowed.
func (s TeamSet) Has(team string) bool {
	_, ok := s[team]
	return ok
}

// Sorted returns the teams in lexical order, for messages.
func (s TeamSet) Sorted() []string {
	teams := make([]string, 0, len(s))
	for team := range s {
		teams = append(teams, team)
	}
	slices.Sort(teams)
	return teams
}

// sameTarget says whether two targets carry the same data, so that one
// object read through two overlapping sources counts once.
func sameTarget(a, b *Target) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Source == b.Source &&
		mapsEqual(a.Labels, b.Labels) && mapsEqual(a.Params, b.Params)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
