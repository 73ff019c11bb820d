"""Classification: a class per example, scored by accuracy and its kin (metrics.score)."""
import metrics
from learning.base import Learning, torch_modules


class Classification(Learning):
    name = "classification"
    curve_keys = ("train_loss", "train_accuracy", "lr")
    needs = "accuracy needs class labels (a labelled dataset, or a csv target column of classes)"

    def prediction_width(self, raw):
        return len(raw.class_names)

    def score(self, y, predictions, width, part, full):
        return metrics.score(y, predictions, width, part, full)

    def output_shape(self, data, batch):
        return [batch, data.num_classes], "(batch, num_classes)"

    def criterion(self, recipe):
        torch, _ = torch_modules()
        return torch.nn.CrossEntropyLoss(label_smoothing=recipe["label_smoothing"])

    def correct(self, output, y):
        return (output.detach().argmax(1) == y).sum()

    def encode(self, data, output):
        _, F = torch_modules()
        return F.log_softmax(output, 1)


LEARNING = Classification()
