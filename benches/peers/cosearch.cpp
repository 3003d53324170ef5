// The reference co-search protocol on the reference NDVM C++ runtime (sheneman/ndvm), natively:
// no Python, no PyTorch, so its throughput is the runtime's own. A measurement harness, not part of
// either project.
//
// Each calibration: parameters drawn as 0.3·N(0,1) (std::mt19937 seeded 1000·cycle + index, as the
// reference's cosearch_e2e.py seeds its torch generator), 50 Adam steps (lr 0.05) on train MSE with
// the train points as lanes of one batched walk (one forward + backward per step, the runtime's
// cached interpreter reused across calls as its Python boundary does), then one held-out forward;
// success when held-out R² > 0.9. The stream is cycled with fresh seeds until the budget ends.
//
// The data: y = f(x) + 0.02·N(0,1) at x = linspace(0.1, 6, 64), 70/30 split, drawn with std::mt19937
// (task `scalar`: f = exp(-0.3x)·cos(2x); `recurrence`: f = sin(1.2x) + 0.3x).
//
// usage: cosearch STREAM.jsonl scalar|recurrence SECONDS
// prints one JSON object: calibrations, elapsed_s, per_second, first_success_s, best_r2,
//        distinct_successes, failed.
#include "interp.hpp"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

struct Candidate { std::string src; std::vector<std::string> params; std::string skeleton; };

// The JSON string starting at s[i] (an opening quote); i ends after the closing quote.
static std::string json_string(const std::string& s, size_t& i) {
  std::string out; ++i;
  while (i < s.size() && s[i] != '"') {
    if (s[i] == '\\' && i + 1 < s.size()) {
      ++i;
      char c = s[i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
    ++i;
  }
  ++i;
  return out;
}

static bool field(const std::string& line, const char* key, size_t& at) {
  std::string k = std::string("\"") + key + "\"";
  size_t p = line.find(k);
  if (p == std::string::npos) return false;
  p = line.find(':', p + k.size());
  if (p == std::string::npos) return false;
  ++p;
  while (p < line.size() && line[p] == ' ') ++p;
  at = p;
  return true;
}

static std::vector<Candidate> load(const char* path) {
  std::vector<Candidate> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    Candidate c; size_t at;
    if (!field(line, "src", at) || line[at] != '"') continue;
    c.src = json_string(line, at);
    if (field(line, "params", at) && line[at] == '[') {
      ++at;
      while (at < line.size() && line[at] != ']') {
        if (line[at] == '"') c.params.push_back(json_string(line, at)); else ++at;
      }
    }
    if (field(line, "skeleton", at) && line[at] == '"') c.skeleton = json_string(line, at);
    if (!c.params.empty()) out.push_back(c);
  }
  return out;
}

// One interpreter per (program, lane count), reused across calls (the reference boundary's cache).
static ndvm::Interp& interp(const std::string& src, uint32_t B) {
  static std::vector<std::pair<std::pair<std::string, uint32_t>, std::unique_ptr<ndvm::Interp>>> cache;
  for (auto& e : cache) if (e.first.second == B && e.first.first == src) return *e.second;
  if (cache.size() >= 16) cache.erase(cache.begin());
  cache.emplace_back(std::make_pair(src, B), std::make_unique<ndvm::Interp>(B));
  return *cache.back().second;
}

// Forward (and, with grads, backward) of `c` at lanes `x` with the parameter values `p`; returns false
// on a runtime error or a non-numeric result.
static bool eval(const Candidate& c, const std::vector<float>& x, const std::vector<double>& p,
                 std::vector<float>& out, std::vector<std::vector<float>>* grads) {
  uint32_t B = (uint32_t)x.size();
  try {
    ndvm::Interp& I = interp(c.src, B);
    I.begin_forward();
    I.bind_scalar_batched("x", x);
    for (size_t i = 0; i < p.size(); ++i) I.bind_scalar_batched(c.params[i], std::vector<float>(B, (float)p[i]));
    I.set_taping(grads != nullptr);
    ndvm::Val r = I.run(c.src);
    if (!I.is_num(r)) return false;
    out.resize(B);
    for (uint32_t b = 0; b < B; ++b) out[b] = I.num_lane(r, b);
    if (grads) {
      I.backward(r);
      grads->assign(p.size(), std::vector<float>(B, 0.0f));
      for (const auto& sp : I.scalar_params())
        for (size_t i = 0; i < p.size(); ++i)
          if (sp.first == c.params[i])
            for (uint32_t b = 0; b < B; ++b) (*grads)[i][b] = I.grad_lane(sp.second, b);
    }
    return true;
  } catch (...) {
    return false;
  }
}

int main(int argc, char** argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: cosearch STREAM.jsonl scalar|recurrence SECONDS\n"); return 2; }
  std::vector<Candidate> cands = load(argv[1]);
  bool scalar = std::string(argv[2]) == "scalar";
  double budget = std::atof(argv[3]);
  if (cands.empty()) { std::fprintf(stderr, "no candidates\n"); return 1; }

  const int n = 64;
  std::mt19937 g(0);
  std::normal_distribution<double> N01(0.0, 1.0);
  std::vector<float> xs(n), ys(n);
  for (int i = 0; i < n; ++i) {
    double x = 0.1 + (6.0 - 0.1) * i / (n - 1);
    double f = scalar ? std::exp(-0.3 * x) * std::cos(2.0 * x) : std::sin(1.2 * x) + 0.3 * x;
    xs[i] = (float)x; ys[i] = (float)(f + 0.02 * N01(g));
  }
  std::vector<int> idx(n);
  for (int i = 0; i < n; ++i) idx[i] = i;
  std::shuffle(idx.begin(), idx.end(), g);
  int ntr = (int)(0.7 * n);
  std::vector<float> xtr, ytr, xho, yho;
  for (int k = 0; k < n; ++k) (k < ntr ? xtr : xho).push_back(xs[idx[k]]), (k < ntr ? ytr : yho).push_back(ys[idx[k]]);
  double mean_ho = 0; for (float y : yho) mean_ho += y; mean_ho /= yho.size();
  double var_ho = 0; for (float y : yho) var_ho += (y - mean_ho) * (y - mean_ho); var_ho /= yho.size();

  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  long calibrations = 0, failed = 0; int cycle = 0;
  double best = -INFINITY, first = -1;
  std::set<std::string> successes;
  std::vector<float> out;
  std::vector<std::vector<float>> grads;
  while (elapsed() < budget) {
    const Candidate& c = cands[calibrations % cands.size()];
    std::mt19937 dg((unsigned)(1000 * cycle + calibrations % cands.size()));
    size_t P = c.params.size();
    std::vector<double> p(P), m(P, 0.0), v(P, 0.0);
    for (auto& pi : p) pi = 0.3 * N01(dg);
    bool ok = true;
    for (int step = 1; step <= 50 && ok; ++step) {
      if (!eval(c, xtr, p, out, &grads)) { ok = false; break; }
      double loss = 0; std::vector<double> gp(P, 0.0);
      for (size_t b = 0; b < xtr.size(); ++b) {
        double r = out[b] - ytr[b]; loss += r * r;
        for (size_t i = 0; i < P; ++i) gp[i] += 2.0 * r * grads[i][b] / xtr.size();
      }
      if (!std::isfinite(loss)) { ok = false; break; }
      for (size_t i = 0; i < P; ++i) {
        m[i] = 0.9 * m[i] + 0.1 * gp[i];
        v[i] = 0.999 * v[i] + 0.001 * gp[i] * gp[i];
        double mh = m[i] / (1 - std::pow(0.9, step)), vh = v[i] / (1 - std::pow(0.999, step));
        p[i] -= 0.05 * mh / (std::sqrt(vh) + 1e-8);
      }
    }
    double r2 = -INFINITY;
    if (ok && eval(c, xho, p, out, nullptr)) {
      double mse = 0; for (size_t b = 0; b < xho.size(); ++b) mse += (out[b] - yho[b]) * (out[b] - yho[b]);
      mse /= xho.size();
      if (std::isfinite(mse)) r2 = 1.0 - mse / var_ho;
    } else {
      ++failed;
    }
    ++calibrations;
    if (calibrations % cands.size() == 0) ++cycle;
    if (r2 > best) best = r2;
    if (r2 > 0.9) { if (first < 0) first = elapsed(); successes.insert(c.skeleton); }
  }
  double t = elapsed();
  std::printf("{\"calibrations\": %ld, \"elapsed_s\": %.3f, \"per_second\": %.1f, \"first_success_s\": %.3f, "
              "\"best_r2\": %.4f, \"distinct_successes\": %zu, \"failed\": %ld}\n",
              calibrations, t, calibrations / t, first, best, successes.size(), failed);
  return 0;
}
