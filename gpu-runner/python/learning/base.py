"""What every task's learning shares, and the defaults a task overrides.

A task's learning is how a model learns from its dataset and how the referee scores it: the
predictions a job returns per example, the shape a model's output must have, the loss, the
trainer's running curve and the metrics. The classes here are used on both sides of the
sandbox: the referee (no torch: it scores with numpy and scikit-learn) reads the facts and
`score`; a job's trainer calls the rest, so torch is imported when a job first needs it.
"""


def torch_modules():
    """torch and torch.nn.functional; imported on a job's first use, never by the referee."""
    import torch
    import torch.nn.functional as F
    return torch, F


class Learning:
    # The proto Task's snake_case name (datasets.TASKS lists them in the enum's order).
    name = ""
    # The trainer's own running curve per epoch (the referee adds the validation curve).
    curve_keys = ("train_loss", "lr")
    # What a goal of this task needs of its dataset, said when a goal asks it of another task's.
    needs = ""
    # What a dataset of this task needs of its goal, said first when one asks it as another task.
    asked_otherwise = ""

    # --- facts and scoring: torch-free ------------------------------------------------------

    def prediction_width(self, raw):
        """Numbers a job predicts per example."""
        raise NotImplementedError

    def input_shape(self, raw):
        """One example's input shape, as the dataset's description gives it."""
        return list(raw.x_train.shape[1:])

    def targets_per_example(self, raw):
        """Targets an example holds: what a validation split's minimum size counts."""
        return 1

    def score(self, y, predictions, width, part, full):
        """Metrics named `<part>_<metric>` of predictions (one array per seed, scored as one model)."""
        raise NotImplementedError

    # --- in the job: torch --------------------------------------------------------------------

    def prepare(self, data, y_train, split, context):
        """The training targets as the job learns them; may set what the task keeps on `data`."""
        return y_train

    def batch(self, data, idx):
        """Inputs and targets of the training examples `idx`."""
        return data.inputs(data.x_train[idx]), data.y_train[idx]

    def output_shape(self, data, batch):
        """The shape a model's output must have for `batch` examples, and what its dimensions mean."""
        raise NotImplementedError

    def summary_shape(self, spec):
        """The output a summarized model must have for one example ([1, ...], its meaning), or None to check only that it is a tensor."""
        if not spec["num_classes"]:
            return None
        return [1, spec["num_classes"]], "(batch, num_classes)"

    def criterion(self, recipe):
        """loss(output, targets) of a training batch."""
        raise NotImplementedError

    def correct(self, output, y):
        """Examples of the batch predicted right, for the running train accuracy; None where there is none."""
        return None

    def encode(self, data, output):
        """A validation or test output as the referee takes it (before metrics.encode)."""
        raise NotImplementedError

    def count(self, models, data):
        """Fills what the seeds' models count of the training examples, before they train (nothing by default)."""

    def check_model(self, model, data, probe):
        """A check of the model beyond its output's shape, on a probe batch (raises TaskFailure)."""

    def predict(self, model, data, x_all, idx, batch_size, forward, what):
        """The job's predictions on x_all[idx] (metrics.encode's form), or None for the trainer's
        batched forward pass and `encode`."""
        return None

    def test_outputs(self, model, data, acc, seed):
        """What a trained model adds to its test predictions for the report."""
        return {}
