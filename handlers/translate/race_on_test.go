//go:build race

package translate

// raceEnabled scales the long property tests down under the race detector.
const raceEnabled = true
