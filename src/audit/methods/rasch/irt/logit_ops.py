"""The cell likelihoods as PyTensor Ops whose value and gradient come out of one kernel call.

Each Op returns the per-cell log density and its derivatives as outputs of one node, so when
PyTensor differentiates the summed density the gradient reads those outputs instead of
recomputing sigmoids and logs. The arithmetic is in logit_kernel.py, where the reasons and the
measurements are. numba (nutpie) compiles the kernels into the model's function; the Python and C
linkers (PyMC's own NUTS, compute_log_likelihood) call the same kernels from ``perform``: a
numpy version there took 187 µs a Rasch gradient against 161 µs for PyTensor's C softplus and
would have slowed every fit on those linkers; with the kernel it takes 62 µs
(benchmarks/bench_gradient.py).
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path

import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key
from pytensor.tensor.type import discrete_dtypes

from audit.methods.rasch.irt.logit_kernel import binomial_logit_terms, misclassified_logit_terms

# What PyTensor's cache key of the Ops is made from: the kernels' file, whole (its helpers live
# there too, for numba's own cache).
KERNEL_SOURCE = Path(inspect.getfile(binomial_logit_terms.py_func)).read_bytes()


def kernel_cache_key(kernel) -> int:
    """The integer PyTensor adds to the cache key of the Op that runs ``kernel``: a hash of the
    kernels' source and the kernel's name. A change to the arithmetic, or an Op pointed at the
    other kernel, compiles the model function afresh; with a hand-bumped version number (this was
    KERNEL_VERSION = 4) a change that forgot the bump passed every test on a machine whose
    ~/.pytensor cache held the old function, and gave users the old arithmetic (mutation review
    2026-12-06)."""
    digest = hashlib.sha256(KERNEL_SOURCE + b"\0" + kernel.__name__.encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # a non-negative int64


def _counts_and_logits(successes, trials, logit_p) -> list[pt.TensorVariable]:
    inputs = [pt.as_tensor_variable(successes), pt.as_tensor_variable(trials),
              pt.cast(pt.as_tensor_variable(logit_p), "float64")]
    if any(variable.type.ndim != 1 for variable in inputs):
        raise TypeError("the cell likelihood Ops take vectors; broadcast and flatten first")
    return inputs


def _connected(gradient) -> bool:
    return not isinstance(gradient.type, DisconnectedType)


class BinomialLogitTerms(Op):
    """(successes, trials, logit_p) -> (k eta - n softplus(eta), k - n sigmoid(eta)) per cell."""

    __props__ = ()

    def make_node(self, successes, trials, logit_p) -> Apply:
        return Apply(self, _counts_and_logits(successes, trials, logit_p),
                     [pt.dvector(), pt.dvector()])

    def perform(self, node, inputs, output_storage) -> None:
        for storage, value in zip(output_storage, binomial_logit_terms(*inputs), strict=True):
            storage[0] = value

    # PyTensor 3.3's signature: with the old `fgraph` first, each class warned as it was made.
    def infer_shape(self, node, input_shapes):
        return [input_shapes[2]] * 2

    def pullback(self, inputs, outputs, output_gradients):  # PyTensor 3 name of L_op
        successes, trials, logit_p = inputs
        _, slope = outputs
        gradient_logp, gradient_slope = output_gradients
        sigmoid = pt.sigmoid(logit_p)
        grads = [pt.zeros_like(successes, dtype="float64"), pt.zeros_like(trials, dtype="float64"),
                 pt.zeros_like(logit_p)]
        if _connected(gradient_logp):
            grads[0] += gradient_logp * logit_p
            grads[1] -= gradient_logp * pt.softplus(logit_p)
            grads[2] += gradient_logp * slope
        if _connected(gradient_slope):
            grads[0] += gradient_slope
            grads[1] -= gradient_slope * sigmoid
            grads[2] -= gradient_slope * trials * sigmoid * (1.0 - sigmoid)
        # PyTensor's convention for integer inputs (counts usually are): a float zero gradient.
        return [pt.zeros_like(variable, dtype="float64") if variable.type.dtype in discrete_dtypes
                else grad for variable, grad in zip(inputs, grads, strict=True)]


class MisclassifiedLogitTerms(Op):
    """(successes, trials, logit_p, sensitivity, specificity) -> the log density of the judge's
    labels per cell and its derivatives in logit_p, sensitivity and specificity.

    The rates are scalars: one judge, one coding, one fit. Only first derivatives are provided;
    asking for a second one through the derivative outputs fails loudly.
    """

    __props__ = ()

    def make_node(self, successes, trials, logit_p, sensitivity, specificity) -> Apply:
        rates = [pt.cast(pt.as_tensor_variable(rate), "float64")
                 for rate in (sensitivity, specificity)]
        if any(rate.type.ndim != 0 for rate in rates):
            raise TypeError("MisclassifiedLogitTerms takes one sensitivity and one specificity")
        return Apply(self, [*_counts_and_logits(successes, trials, logit_p), *rates],
                     [pt.dvector() for _ in range(4)])

    def perform(self, node, inputs, output_storage) -> None:
        for storage, value in zip(output_storage, misclassified_logit_terms(*inputs), strict=True):
            storage[0] = value

    def infer_shape(self, node, input_shapes):
        return [input_shapes[2]] * 4

    def pullback(self, inputs, outputs, output_gradients):  # PyTensor 3 name of L_op
        if any(_connected(gradient) for gradient in output_gradients[1:]):
            return [grad_not_implemented(self, position, variable,
                                         "second derivatives of the judge-error likelihood")
                    for position, variable in enumerate(inputs)]
        gradient_logp = output_gradients[0]
        _, d_logit, d_sensitivity, d_specificity = outputs
        counts = [grad_not_implemented(self, position, inputs[position],
                                       "derivatives in the counts") for position in (0, 1)]
        if not _connected(gradient_logp):
            return [*counts, *(pt.zeros_like(variable) for variable in inputs[2:])]
        return [*counts, gradient_logp * d_logit, (gradient_logp * d_sensitivity).sum(),
                (gradient_logp * d_specificity).sum()]


binomial_logit_terms_op = BinomialLogitTerms()
misclassified_logit_terms_op = MisclassifiedLogitTerms()


@register_funcify_default_op_cache_key(BinomialLogitTerms)
def _numba_binomial_logit_terms(op, node=None, **kwargs):
    return binomial_logit_terms, kernel_cache_key(binomial_logit_terms)


@register_funcify_default_op_cache_key(MisclassifiedLogitTerms)
def _numba_misclassified_logit_terms(op, node=None, **kwargs):
    return misclassified_logit_terms, kernel_cache_key(misclassified_logit_terms)


def binomial_logit_logp(successes, trials, logit_p) -> pt.TensorVariable:
    """``k * logit_p - n * softplus(logit_p)`` per cell, through the one-exp kernel."""
    successes, trials, logit_p = pt.broadcast_arrays(successes, trials, logit_p)
    logp, _ = binomial_logit_terms_op(successes.ravel(), trials.ravel(), logit_p.ravel())
    return logp.reshape(logit_p.shape)


def misclassified_logit_logp(successes, trials, logit_p, sensitivity,
                             specificity) -> pt.TensorVariable:
    """``k log r + (n - k) log(1 - r)`` per cell, r the judge's chance of saying 1."""
    successes, trials, logit_p = pt.broadcast_arrays(successes, trials, logit_p)
    logp, *_ = misclassified_logit_terms_op(successes.ravel(), trials.ravel(), logit_p.ravel(),
                                            sensitivity, specificity)
    return logp.reshape(logit_p.shape)
