package render

import (
	"crypto/sha256"
	"encoding/hex"
)

// maxStageNameLength keeps generated Stage names usable as label values:
// Kargo labels every Promotion with its Stage's name.
const maxStageNameLength = 63

// WaveStageName is the name of a FleetStage's wave Stage: "<fleetstage>-<wave>".
// FleetStage names are DNS labels of at most 30 characters and wave names DNS
// labels of at most 24, so the name never needs shortening and never holds a
// dot.
func WaveStageName(fleetStage, wave string) string {
	return fleetStage + "-" + wave
}

// TargetStageName is the name of a target's Stage: "<fleetstage>.<target id>",
// shortened with a hash when longer than 63 characters. The dot cannot occur
// in a wave Stage name or a FleetStage name, so target Stages collide neither
// with wave Stages nor with another FleetStage's target Stages.
func TargetStageName(fleetStage, targetID string) string {
	name := fleetStage + "." + targetID
	if len(name) <= maxStageNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:8]
	keep := maxStageNameLength - len(suffix) - 1
	for keep > 0 && name[keep-1] == '-' {
		keep--
	}
	return name[:keep] + "-" + suffix
}
