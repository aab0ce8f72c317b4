package conditions

import "testing"

func TestIsPaused(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{"other": "true"}, false},
		{map[string]string{PausedAnnotation: "true"}, true},
		{map[string]string{PausedAnnotation: ""}, true},
		{map[string]string{PausedAnnotation: "false"}, false},
	} {
		if got := IsPaused(tc.annotations); got != tc.want {
			t.Errorf("IsPaused(%v) = %v, want %v", tc.annotations, got, tc.want)
		}
	}
}
