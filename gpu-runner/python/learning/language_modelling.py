"""Byte-level language modelling: each row of a corpus is bytes, and the model gives, at every
position, a score per byte value for the byte that comes next. A model reads `context` bytes at
once (the recipe's, a power of two dividing the rows); each row holds `windows` of them, and an
epoch draws each row that many times. Scored in bits per byte (metrics.score_text)."""
import metrics
from failures import Stage, TaskFailure
from learning.base import Learning, torch_modules

# Bytes of text a trained language model writes for the report, and how freely it picks them.
SAMPLE_BYTES = 300
SAMPLE_TEMPERATURE = 0.8


class LanguageModelling(Learning):
    name = "language_modelling"
    needs = "bits per byte needs a text corpus (text:FILE.txt or a folder of .txt files)"

    def prediction_width(self, raw):
        # A row holds its inputs and, one byte on, their targets.
        return raw.x_train.shape[1] - 1

    def input_shape(self, raw):
        return [self.prediction_width(raw)]

    def targets_per_example(self, raw):
        return self.prediction_width(raw)

    def score(self, y, predictions, width, part, full):
        return metrics.score_text(predictions, part, full)

    def prepare(self, data, y_train, split, context):
        width = split.raw.prediction_width
        data.context = context or width
        if width % data.context:
            raise TaskFailure("invalid_config", f"recipe.context = {context} must divide the corpus rows of "
                              f"{width} bytes (a power of two up to {width})")
        data.windows = width // data.context
        return y_train

    def batch(self, data, idx):
        """A window of each row at a random offset: its bytes as inputs, the bytes after them as targets."""
        torch, _ = torch_modules()
        rows = data.x_train[idx]
        offsets = torch.randint(0, rows.shape[1] - data.context, (len(idx), 1), device=rows.device)
        windows = rows.gather(1, offsets + torch.arange(data.context + 1, device=rows.device)).long()
        return windows[:, :-1], windows[:, 1:]

    def output_shape(self, data, batch):
        return [batch, data.context, data.vocab_size], "(batch, length, 256): a score per byte value at each position"

    def summary_shape(self, spec):
        length = spec["input_shape"][0]
        return [1, length, spec["vocab_size"]], "(batch, length, 256): a score per byte value at each position"

    def criterion(self, recipe):
        _, F = torch_modules()
        return lambda out, y: F.cross_entropy(out.flatten(0, 1), y.flatten())

    def count(self, models, data):
        """What a model counts of the training text (a module with `fit_counts`, as core/compiler/
        blocks.py's ByteCounts has: an n-gram mixed into its predictions), from this job's
        training rows only; seeds together share the first seed's counts."""
        rows = data.x_train[data.train]
        for name, module in models[0].named_modules():
            if callable(getattr(module, "fit_counts", None)):
                with Stage("crash", "counting the training text"):
                    module.fit_counts(rows)
                    for other in models[1:]:
                        other.get_submodule(name).load_state_dict(module.state_dict())

    def check_model(self, model, data, x):
        """A language model must not read ahead: changing a byte may change predictions from its
        position on, never before it (the bytes it predicts are in its inputs)."""
        torch, _ = torch_modules()
        where = x.shape[1] // 2
        altered = x.clone()
        altered[:, where] = (altered[:, where] + 1) % data.vocab_size
        with Stage("shape_error", "the causality probe"), torch.no_grad():
            model.eval()
            before, after = model(x)[:, :where], model(altered)[:, :where]
        if not torch.allclose(before, after, rtol=1e-3, atol=1e-4):
            raise TaskFailure("codegen_error", f"the model reads ahead: changing byte {where} of {x.shape[1]} changed its "
                              "predictions at earlier positions (mask attention to earlier positions; no bidirectional layers)")

    def predict(self, model, data, x_all, idx, batch_size, forward, what):
        """Per row, the log-probability the model gives each next byte, reading the row in windows of
        its context that start afresh, so every context scores the same targets per row.

        The targets are the inputs shifted by one: a language model's labels cannot be kept from
        the sandbox, so this log-softmax and gather are the trainer's, and `check_model` refuses a
        model that reads ahead."""
        torch, F = torch_modules()
        model.eval()
        rows_per_chunk = max(1, batch_size // data.windows)
        outputs = []
        with Stage("crash", what), torch.no_grad():
            for chunk in idx.split(rows_per_chunk):
                rows = x_all[chunk].long()
                x = rows[:, :-1].reshape(-1, data.context)
                y = rows[:, 1:].reshape(-1, data.context)
                logits = forward(x)
                if not torch.isfinite(logits).all():
                    raise TaskFailure("nan_loss", f"{what}: the model's outputs are not all finite")
                picked = F.log_softmax(logits, -1).gather(-1, y[..., None])[..., 0]
                outputs.append(picked.reshape(len(rows), -1))
        return metrics.encode(torch.cat(outputs).cpu().numpy())

    def test_outputs(self, model, data, acc, seed):
        """Text the model writes after the first test row's first context, drawn at SAMPLE_TEMPERATURE."""
        torch, F = torch_modules()
        prompt = data.x_test[data.test[0], :data.context]
        model.eval()
        generator = torch.Generator(device=prompt.device).manual_seed(seed)
        text = prompt.long()[None]
        with Stage("crash", "writing a sample of text"), torch.no_grad():
            for _ in range(SAMPLE_BYTES):
                logits = model(text[:, -data.context:])[:, -1].float() / SAMPLE_TEMPERATURE
                following = torch.multinomial(F.softmax(logits, -1), 1, generator=generator)
                text = torch.cat([text, following], 1)
        return {"sample": bytes(text[0, len(prompt):].cpu().tolist()).decode("utf-8", errors="replace")}


LEARNING = LanguageModelling()
