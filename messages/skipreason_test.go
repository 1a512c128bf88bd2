package messages

import "testing"

func TestSkipReasonTextRoundTrip(t *testing.T) {
	for _, r := range append(SkipReasons(), SkipNone) {
		b, err := r.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back SkipReason
		if err := back.UnmarshalText(b); err != nil || back != r {
			t.Fatalf("%s came back as %s (%v)", r, back, err)
		}
	}
	var r SkipReason
	if err := r.UnmarshalText([]byte("made_up")); err == nil {
		t.Fatal("an unknown code was accepted")
	}
}
