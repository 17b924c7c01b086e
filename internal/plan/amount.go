package plan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// amount is a parsed count-or-percent (IntOrString) field.
type amount struct {
	value   int
	percent bool
}

// maxAmount bounds plain numbers so that arithmetic on them cannot overflow;
// no fleet comes near it.
const maxAmount = 1 << 30

// parseAmount parses v, which must be a non-negative integer or a string
// "<digits>%" between 0% and 100%. Bounds that depend on the field (at least 1,
// at least 1%) are checked by the caller.
func parseAmount(v intstr.IntOrString) (amount, error) {
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return amount{}, errors.New("must be a non-negative integer or a percentage")
		}
		if v.IntVal > maxAmount {
			return amount{}, fmt.Errorf("must be at most %d", maxAmount)
		}
		return amount{value: int(v.IntVal)}, nil
	case intstr.String:
		digits, ok := strings.CutSuffix(v.StrVal, "%")
		if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
			return amount{}, errors.New(`must be an integer or a percentage such as "10%"`)
		}
		if len(digits) > 4 {
			return amount{}, errors.New("percentage must be between 0% and 100%")
		}
		pct, err := strconv.Atoi(digits)
		if err != nil || pct > 100 {
			return amount{}, errors.New("percentage must be between 0% and 100%")
		}
		return amount{value: pct, percent: true}, nil
	default:
		return amount{}, errors.New("must be an integer or a percentage")
	}
}

// roundUp resolves the amount against total, rounding a percentage up:
// ceil(pct*total/100). It is used for wave counts and maxConcurrent, where
// rounding down could make a small wave empty.
func (a amount) roundUp(total int) int {
	if !a.percent {
		return a.value
	}
	return (a.value*total + 99) / 100
}

// roundDown resolves the amount against total, rounding a percentage down:
// floor(pct*total/100). It is used for failure thresholds, where rounding up
// would tolerate more failures than the percentage says.
func (a amount) roundDown(total int) int {
	if !a.percent {
		return a.value
	}
	return a.value * total / 100
}

// String renders the amount as written in the spec.
func (a amount) String() string {
	if a.percent {
		return strconv.Itoa(a.value) + "%"
	}
	return strconv.Itoa(a.value)
}

// parsePositiveAmount parses an amount that must be at least 1 or 1%
// (counts, maxConcurrent).
func parsePositiveAmount(v intstr.IntOrString) (amount, error) {
	a, err := parseAmount(v)
	if err != nil {
		return a, err
	}
	if a.value < 1 {
		if a.percent {
			return a, errors.New("percentage must be between 1% and 100%")
		}
		return a, errors.New("must be at least 1")
	}
	return a, nil
}
