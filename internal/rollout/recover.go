package rollout

import (
	"fmt"
	"strings"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Kargo v1.11.2 counts a step's errors over the step's whole life: the
// count is reset only when the step first starts, never by a good call in
// between. A wave Stage Promotion whose fleet-wave step waits days (for an
// approval, a soak, a change window, a long wave) meets every step server
// restart, upgrade and replica switch of those days, and each gap costs
// errors until Kargo's backoff reaches the next good call. However high its
// errorThreshold, enough gaps end it Errored: Kargo then never marks the
// Freight verified in the wave Stage, and the next wave, or the Stages
// downstream of the fleet, never get it. The rollout itself goes on (it
// runs from its own record of the request), so kargo-fleet promotes the
// Freight into the wave Stage again: the new Promotion's fleet-wave step
// takes the wave over where it stands. Failed and Aborted Promotions are
// decisions (of the step, or of a person) and are left alone.

// WaveRecoveryKeyPrefix prefixes the key of a recovering wave Stage
// Promotion ("wave-recovery:<wave>/<errored Promotion>") in expectations
// and status.dispatch claims.
const WaveRecoveryKeyPrefix = "wave-recovery:"

// Recovery pacing: the first recovery of a wave waits recoveryBaseDelay
// after its Promotion errored, each further one twice as long, at most
// recoveryMaxDelay. A step server that is up answers the new Promotion at
// once; one that stays unreachable is not flooded with Promotions.
const (
	recoveryBaseDelay = 10 * time.Second
	recoveryMaxDelay  = 10 * time.Minute
)

// WaveRecoveryKey returns the key of the Promotion that recovers wave from
// its errored Promotion.
func WaveRecoveryKey(wave, errored string) string {
	return WaveRecoveryKeyPrefix + wave + "/" + errored
}

// ParseWaveRecoveryKey splits a WaveRecoveryKey; ok is false for any other
// key. Wave names carry no "/".
func ParseWaveRecoveryKey(key string) (wave, errored string, ok bool) {
	rest, ok := strings.CutPrefix(key, WaveRecoveryKeyPrefix)
	if !ok {
		return "", "", false
	}
	wave, errored, ok = strings.Cut(rest, "/")
	return wave, errored, ok && wave != "" && errored != ""
}

// ErroredWavePromotion is the newest wave Stage Promotion of a wave that
// ended Errored.
type ErroredWavePromotion struct {
	// Name is the Promotion's name.
	Name string
	// Message is Kargo's message, bounded.
	Message string
	// FinishedAt is when it ended (its creation when Kargo recorded no end).
	FinishedAt time.Time
	// Recoveries counts the wave's Promotions kargo-fleet already made to
	// recover it in this rollout.
	Recoveries int
}

// WaveRecovery is a wave Stage Promotion to create because the wave's
// Promotion errored.
type WaveRecovery struct {
	// Wave is the wave.
	Wave string
	// Errored is the Promotion that errored.
	Errored ErroredWavePromotion
}

// Key returns the recovery's key.
func (w WaveRecovery) Key() string { return WaveRecoveryKey(w.Wave, w.Errored.Name) }

// recoveryDelay is how long after the errored Promotion ended the next
// recovery is made.
func recoveryDelay(recoveries int) time.Duration {
	d := recoveryBaseDelay
	for range recoveries {
		if d *= 2; d >= recoveryMaxDelay {
			return recoveryMaxDelay
		}
	}
	return d
}

// recoverAt is when kargo-fleet promotes the wave Stage again.
func (e ErroredWavePromotion) recoverAt() time.Time {
	return e.FinishedAt.Add(recoveryDelay(e.Recoveries))
}

// recoveryNote says what happens to a wave whose Promotion errored, or ""
// when it did not.
func (o *Observation) recoveryNote(wave string) string {
	e, ok := o.WaveErrored[wave]
	if !ok || o.Rollout.Spec.Direction != fleetv1alpha1.DirectionForward {
		return ""
	}
	when := "now"
	if at := e.recoverAt(); o.Now.Before(at) {
		when = "at " + at.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("Promotion %s of wave Stage %s ended Errored (%s); kargo-fleet promotes the Freight into it again %s",
		e.Name, o.WaveStage(wave), e.Message, when)
}

// planRecovery picks the first wave, in plan order, whose Promotion errored
// and whose recovery is due, for a forward rollout that goes on. A wave not
// due yet sets the time to look again.
func planRecovery(o Observation, d *Decision) {
	r := o.Rollout
	if len(o.WaveErrored) == 0 || r.Spec.Direction != fleetv1alpha1.DirectionForward ||
		r.Spec.Intent == fleetv1alpha1.IntentAbort || d.Phase.IsFinal() {
		return
	}
	for _, w := range o.Plan.Waves {
		e, ok := o.WaveErrored[w.Name]
		if !ok {
			continue
		}
		if at := e.recoverAt(); o.Now.Before(at) {
			d.RequeueAt = earliest(d.RequeueAt, at)
			continue
		}
		d.RecoverWave = &WaveRecovery{Wave: w.Name, Errored: e}
		return
	}
}

// wavePromotions tracks, per wave, the newest wave Stage Promotion of the
// rollout's Freight that is the rollout's (made after the rollout began,
// or the one that asked for the wave), and the recoveries made.
type wavePromotions struct {
	newest     map[string]*kargo.Promotion
	recoveries map[string]int
	// recovered are the errored Promotions a recovery exists for.
	recovered map[string]bool
}

func newWavePromotions() *wavePromotions {
	return &wavePromotions{newest: map[string]*kargo.Promotion{}, recoveries: map[string]int{}, recovered: map[string]bool{}}
}

func (w *wavePromotions) add(ro *fleetv1alpha1.FleetRollout, wave string, p *kargo.Promotion, requested bool) {
	if p.Spec.Freight != ro.Spec.Freight.Name || p.Annotations[kargo.RollbackAnnotation] == "true" ||
		!requested && p.CreationTimestamp.Before(&ro.CreationTimestamp) {
		return
	}
	if errored := p.Annotations[fleetv1alpha1.RecoversAnnotation]; errored != "" && p.Labels[fleetv1alpha1.WavePromotionLabel] == ro.Name {
		w.recoveries[wave]++
		w.recovered[errored] = true
	}
	cur := w.newest[wave]
	if cur == nil || p.NewerThan(cur) {
		w.newest[wave] = p
	}
}

// errored returns the waves whose newest Promotion ended Errored and has no
// recovery yet.
func (w *wavePromotions) errored() map[string]ErroredWavePromotion {
	out := map[string]ErroredWavePromotion{}
	for wave, p := range w.newest {
		if p.Status.Phase != kargo.PromotionErrored || w.recovered[p.Name] {
			continue
		}
		at := p.CreationTimestamp.Time
		if p.Status.FinishedAt != nil {
			at = p.Status.FinishedAt.Time
		}
		out[wave] = ErroredWavePromotion{Name: p.Name, Message: strutil.Truncate(p.Status.Message, maxRecoveryMessage),
			FinishedAt: at.UTC(), Recoveries: w.recoveries[wave]}
	}
	return out
}

// maxRecoveryMessage bounds Kargo's message quoted in a recovery.
const maxRecoveryMessage = 256
