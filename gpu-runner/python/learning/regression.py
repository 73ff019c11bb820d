"""Regression: one number per example. The model learns targets standardised over the training
split (so one learning rate suits a target in any units) with the mean squared error; its
predictions go back in the target's own units, scored by RMSE, MAE and R^2."""
import metrics
from learning.base import Learning, torch_modules


class Regression(Learning):
    name = "regression"
    needs = "a regression goal needs a numeric target (a csv target column, or diabetes)"
    asked_otherwise = "its goal needs a regression metric (rmse, mae or r2)"

    def prediction_width(self, raw):
        return 1

    def score(self, y, predictions, width, part, full):
        return metrics.score_regression(y, predictions, part, full)

    def prepare(self, data, y_train, split, context):
        known = y_train[split.train]
        data.target_mean, data.target_std = float(known.mean()), float(known.std()) or 1.0
        return ((y_train - data.target_mean) / data.target_std).astype("float32")

    def output_shape(self, data, batch):
        return [batch, 1], "(batch, 1): one value per example for a regression"

    def criterion(self, recipe):
        _, F = torch_modules()
        return lambda out, y: F.mse_loss(out[:, 0], y)

    def encode(self, data, output):
        return output * data.target_std + data.target_mean


LEARNING = Regression()
