package switchover

import "testing"

func TestPending(t *testing.T) {
	tests := []struct {
		annotations     map[string]string
		last            *Status
		request, target string
	}{
		{nil, nil, "", ""},
		{map[string]string{Annotation: ""}, nil, "", ""},
		{map[string]string{Annotation: "r-1"}, nil, "r-1", "r-1"},
		{map[string]string{Annotation: "any"}, nil, "any", "any"},
		{map[string]string{Annotation: "r-1"}, &Status{Request: "r-1", Outcome: Done}, "", ""},
		{map[string]string{Annotation: "r-1"}, &Status{Request: "r-1", Outcome: Refused}, "", ""},
		{map[string]string{Annotation: "r-1/2"}, &Status{Request: "r-1", Outcome: Done}, "r-1/2", "r-1"},
		{map[string]string{Annotation: " r-2 "}, &Status{Request: "r-1", Outcome: Done}, "r-2", "r-2"},
	}
	for _, tt := range tests {
		request, target := Pending(tt.annotations, tt.last)
		if request != tt.request || target != tt.target {
			t.Errorf("Pending(%v, %v) = %q, %q; want %q, %q", tt.annotations, tt.last, request, target, tt.request, tt.target)
		}
	}
}
