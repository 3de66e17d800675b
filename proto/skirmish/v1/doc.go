// Package skirmishv1 holds the generated Go types of the skirmish demo game's command
// payloads and parameters, from skirmish.proto beside this file.
package skirmishv1
