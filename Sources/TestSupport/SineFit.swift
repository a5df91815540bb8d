import Foundation

/// Fits a sine to a signal (frequency by a fine search around a guess, amplitude and phase by least squares) and
/// reports the residual: THD+N in dB relative to the fitted sine.
public struct SineFit: Sendable {
    public var frequency: Double
    public var amplitude: Double
    public var thdPlusNoiseDB: Double

    public static func fit(_ x: [Float], sampleRate: Int, around guess: Double) -> SineFit {
        func residual(_ f: Double) -> (Double, Double) {
            var ss = 0.0, sc = 0.0, cc = 0.0, xs = 0.0, xc = 0.0
            let w = 2 * Double.pi * f / Double(sampleRate)
            for (i, v) in x.enumerated() {
                let s = sin(w * Double(i)), c = cos(w * Double(i))
                ss += s * s; sc += s * c; cc += c * c; xs += Double(v) * s; xc += Double(v) * c
            }
            let det = ss * cc - sc * sc
            let a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det
            var r = 0.0
            for (i, v) in x.enumerated() {
                let e = Double(v) - a * sin(w * Double(i)) - b * cos(w * Double(i))
                r += e * e
            }
            return (r, (a * a + b * b).squareRoot())
        }
        var best = guess
        var step = 1.0
        var bestR = residual(best).0
        while step > 1e-5 {
            for candidate in [best - step, best + step] {
                let r = residual(candidate).0
                if r < bestR { bestR = r; best = candidate }
            }
            step /= 2
        }
        let (r, amp) = residual(best)
        let signalPower = amp * amp / 2
        let noisePower = r / Double(x.count)
        return SineFit(frequency: best, amplitude: amp, thdPlusNoiseDB: 10 * log10(max(noisePower, 1e-30) / signalPower))
    }
}
