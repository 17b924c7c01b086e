package plan

// Time zones are resolved from data embedded in the binary (time/tzdata), so
// that a window means the same thing on every machine, including container
// images without /usr/share/zoneinfo.
import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

const (
	// maxWindows is the number of windows one bitmask can track; the API
	// allows no more.
	maxWindows = 32
	// maxWindowDuration keeps a window shorter than a (leap) year. Longer
	// windows would overlap themselves for any yearly schedule, and cron's
	// search for the next activation looks only five years ahead.
	maxWindowDuration = 366 * 24 * time.Hour
	// windowSearchBudget bounds the work of one search for the next allowed
	// instant, counted in schedule evaluations. Each step of the search jumps
	// to the next relevant window opening or closing; a window that never
	// closes (a deny window firing every minute for an hour) exhausts the
	// budget and the search reports that it found no opening.
	windowSearchBudget = 4096
)

// windowParser accepts exactly five fields (minute hour day-of-month month
// day-of-week) and no "@every"-style descriptors, whose activations depend
// on when they were first evaluated rather than on the calendar.
var windowParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// validationReference is the fixed instant a schedule must fire after to be
// valid; validation never reads the clock. Cron looks five years ahead, which
// covers 29 February.
var validationReference = time.Date(2001, time.January, 1, 0, 0, 0, 0, time.UTC)

// compiledWindow is one change window, parsed.
type compiledWindow struct {
	name     string
	deny     bool
	schedule *cron.SpecSchedule
	duration time.Duration
	// selector restricts the window to matching targets; nil means every target.
	selector labels.Selector
}

// parseSchedule parses a five-field cron expression in loc. It never panics.
func parseSchedule(spec string, loc *time.Location) (_ *cron.SpecSchedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid schedule: %v", r)
		}
	}()
	trimmed := strings.TrimSpace(spec)
	// The time zone has its own field; cron's inline prefix is refused so that
	// there is exactly one place to read it (and because the parser panics on
	// some malformed prefixes).
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, fmt.Errorf("set the time zone in timeZone, not in the schedule")
	}
	parsed, err := windowParser.Parse(trimmed)
	if err != nil {
		return nil, err
	}
	s, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported schedule %q", spec)
	}
	s.Location = loc
	return s, nil
}

// loadTimeZone resolves an IANA time zone; empty means UTC. "Local" is
// refused: it would depend on the machine the controller runs on.
func loadTimeZone(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf("the machine's local time zone is not allowed; name an IANA time zone such as Europe/Berlin")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown IANA time zone %q", name)
	}
	return loc, nil
}

// compileWindow validates and compiles one spec.policy.windows entry.
func compileWindow(w *fleetv1alpha1.ChangeWindow, fldPath *field.Path) (*compiledWindow, field.ErrorList) {
	var errs field.ErrorList
	if w.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "window name is required"))
	}
	switch w.Type {
	case fleetv1alpha1.WindowAllow, fleetv1alpha1.WindowDeny:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), w.Type,
			[]fleetv1alpha1.WindowType{fleetv1alpha1.WindowAllow, fleetv1alpha1.WindowDeny}))
	}
	loc, err := loadTimeZone(w.TimeZone)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("timeZone"), w.TimeZone, err.Error()))
		loc = time.UTC
	}
	var schedule *cron.SpecSchedule
	if strings.TrimSpace(w.Schedule) == "" {
		errs = append(errs, field.Required(fldPath.Child("schedule"), "a five-field cron schedule is required"))
	} else if schedule, err = parseSchedule(w.Schedule, loc); err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("schedule"), w.Schedule, err.Error()))
	} else if schedule.Next(validationReference).IsZero() {
		errs = append(errs, field.Invalid(fldPath.Child("schedule"), w.Schedule, "schedule never fires"))
	}
	switch d := w.Duration.Duration; {
	case d <= 0:
		errs = append(errs, field.Invalid(fldPath.Child("duration"), w.Duration.String(), "duration must be positive"))
	case d > maxWindowDuration:
		errs = append(errs, field.Invalid(fldPath.Child("duration"), w.Duration.String(),
			"duration must be at most 366 days (8784h)"))
	}
	selector, selErrs := compileLabelSelector(w.Selector, fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	return &compiledWindow{
		name:     w.Name,
		deny:     w.Type == fleetv1alpha1.WindowDeny,
		schedule: schedule,
		duration: w.Duration.Duration,
		selector: selector,
	}, nil
}

// openAt reports whether the window is open at t: some activation s has
// s <= t < s+duration. cron's Next returns the first activation strictly
// after its argument, hence the first activation after t-duration.
func (w *compiledWindow) openAt(t time.Time) bool {
	s := w.schedule.Next(t.Add(-w.duration))
	return !s.IsZero() && !s.After(t)
}

// closesAt returns when the window, open at t, closes: back-to-back or
// overlapping activations are merged into one open period. Each schedule
// evaluation spends one unit of budget; when the budget runs out, the end
// merged so far is returned.
func (w *compiledWindow) closesAt(t time.Time, budget *int) time.Time {
	*budget--
	s := w.schedule.Next(t.Add(-w.duration))
	if s.IsZero() {
		return t
	}
	end := s.Add(w.duration)
	for *budget > 0 {
		*budget--
		n := w.schedule.Next(s)
		if n.IsZero() || n.After(end) {
			break
		}
		s, end = n, n.Add(w.duration)
	}
	return end
}

// opensAt returns the next activation after t, or the zero time when there
// is none within cron's five-year search.
func (w *compiledWindow) opensAt(t time.Time) time.Time {
	return w.schedule.Next(t)
}

// applies reports whether the window applies to t.
func (w *compiledWindow) applies(t *Target) bool {
	return w.selector == nil || w.selector.Matches(labels.Set(t.Labels))
}

// windowSet is the change windows of a policy with bitmasks for fast checks:
// bit i stands for windows[i].
type windowSet struct {
	windows []*compiledWindow
	// allowBits and denyBits are the bits of allow and deny windows.
	allowBits, denyBits uint32
}

// applicable returns the bits of the windows that apply to t.
func (ws *windowSet) applicable(t *Target) uint32 {
	var mask uint32
	for i, w := range ws.windows {
		if w.applies(t) {
			mask |= 1 << i
		}
	}
	return mask
}

// openBits returns the bits of the windows open at now. It is computed once
// per scheduling decision, not per target.
func (ws *windowSet) openBits(now time.Time) uint32 {
	var open uint32
	for i, w := range ws.windows {
		if w.openAt(now) {
			open |= 1 << i
		}
	}
	return open
}

// allowed decides, for a target whose applicable windows are mask, given the
// open windows: deny wins over allow; with any allow window applying, one of
// them must be open.
func (ws *windowSet) allowed(mask, open uint32) bool {
	if mask&ws.denyBits&open != 0 {
		return false
	}
	allows := mask & ws.allowBits
	return allows == 0 || allows&open != 0
}

// nextAllowed finds the first instant at or after now when a target whose
// applicable windows are mask may start. It walks from one relevant window
// transition to the next (a deny window closing, an allow window opening) and
// returns false when no transition is left or the search budget is spent.
func (ws *windowSet) nextAllowed(mask uint32, now time.Time) (time.Time, bool) {
	t := now
	budget := windowSearchBudget
	for budget > 0 {
		open := ws.openBitsMasked(mask, t)
		budget -= len(ws.windows)
		if ws.allowed(mask, open) {
			return t, true
		}
		var next time.Time
		for i, w := range ws.windows {
			bit := uint32(1) << i
			if mask&bit == 0 {
				continue
			}
			var candidate time.Time
			switch {
			case w.deny && open&bit != 0:
				candidate = w.closesAt(t, &budget)
			case !w.deny && open&bit == 0:
				budget--
				candidate = w.opensAt(t)
			default:
				continue
			}
			if candidate.After(t) && (next.IsZero() || candidate.Before(next)) {
				next = candidate
			}
		}
		if next.IsZero() {
			return time.Time{}, false
		}
		t = next
	}
	return time.Time{}, false
}

// openBitsMasked is openBits restricted to the windows in mask.
func (ws *windowSet) openBitsMasked(mask uint32, now time.Time) uint32 {
	var open uint32
	for i, w := range ws.windows {
		if bit := uint32(1) << i; mask&bit != 0 && w.openAt(now) {
			open |= bit
		}
	}
	return open
}
