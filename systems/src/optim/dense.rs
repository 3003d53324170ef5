//! Small dense symmetric systems: the `P × P` matrices of an optimizer step or a covariance
//! (P = the parameter count, a handful). Cholesky factorization, solve and inverse, row-major.

/// The lower Cholesky factor `L` of a symmetric positive-definite `a` (`n × n`, row-major;
/// only its lower triangle is read), or `None` when `a` is not positive definite (a pivot ≤ 0
/// or not finite).
pub fn cholesky(n: usize, a: &[f64]) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Solves `L Lᵀ x = b` given the factor from [`cholesky`].
pub fn solve(n: usize, l: &[f64], b: &[f64]) -> Vec<f64> {
    let mut y = b.to_vec();
    for i in 0..n {
        for k in 0..i {
            y[i] -= l[i * n + k] * y[k];
        }
        y[i] /= l[i * n + i];
    }
    for i in (0..n).rev() {
        for k in i + 1..n {
            y[i] -= l[k * n + i] * y[k];
        }
        y[i] /= l[i * n + i];
    }
    y
}

/// The inverse of a symmetric positive-definite `a` (`None` when it is not), row-major.
pub fn inverse(n: usize, a: &[f64]) -> Option<Vec<f64>> {
    let l = cholesky(n, a)?;
    let mut inv = vec![0.0; n * n];
    let mut e = vec![0.0; n];
    for j in 0..n {
        e.iter_mut().for_each(|x| *x = 0.0);
        e[j] = 1.0;
        for (i, x) in solve(n, &l, &e).into_iter().enumerate() {
            inv[i * n + j] = x;
        }
    }
    // Exactly symmetric, whatever the rounding of the two triangular solves.
    for i in 0..n {
        for j in 0..i {
            let m = 0.5 * (inv[i * n + j] + inv[j * n + i]);
            inv[i * n + j] = m;
            inv[j * n + i] = m;
        }
    }
    Some(inv)
}

/// `JᵀJ` (row-major, `p × p`) and `Jᵀe` of a row-major `rows × p` Jacobian `j`.
pub fn normal_equations(p: usize, j: &[f64], e: &[f64]) -> (Vec<f64>, Vec<f64>) {
    if p == 0 {
        // Nothing to fit: an empty system.
        return (Vec::new(), Vec::new());
    }
    let mut jtj = vec![0.0; p * p];
    let mut jte = vec![0.0; p];
    for (row, &ek) in j.chunks_exact(p).zip(e) {
        for a in 0..p {
            jte[a] += row[a] * ek;
            for b in 0..=a {
                jtj[a * p + b] += row[a] * row[b];
            }
        }
    }
    for a in 0..p {
        for b in 0..a {
            jtj[b * p + a] = jtj[a * p + b];
        }
    }
    (jtj, jte)
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

pub fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_and_inverts_a_symmetric_positive_definite_matrix() {
        // A = MᵀM + I for a fixed M: positive definite.
        let m = [1.0, 2.0, 0.5, -1.0, 0.3, 4.0, 2.0, 0.0, 1.5];
        let (mut a, _) = normal_equations(3, &m, &[0.0; 3]);
        for i in 0..3 {
            a[i * 3 + i] += 1.0;
        }
        let b = [1.0, -2.0, 0.25];
        let x = solve(3, &cholesky(3, &a).expect("spd"), &b);
        for i in 0..3 {
            let ax: f64 = (0..3).map(|k| a[i * 3 + k] * x[k]).sum();
            assert!((ax - b[i]).abs() < 1e-12, "{ax} vs {}", b[i]);
        }
        let inv = inverse(3, &a).expect("spd");
        for i in 0..3 {
            for j in 0..3 {
                let e: f64 = (0..3).map(|k| a[i * 3 + k] * inv[k * 3 + j]).sum();
                assert!((e - f64::from(u8::from(i == j))).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn refuses_matrices_that_are_not_positive_definite() {
        assert!(cholesky(2, &[1.0, 2.0, 2.0, 1.0]).is_none());
        assert!(cholesky(2, &[0.0, 0.0, 0.0, 1.0]).is_none());
        assert!(cholesky(1, &[f64::NAN]).is_none());
    }
}
