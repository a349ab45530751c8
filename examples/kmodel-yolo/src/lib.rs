//! Post-processing for the Kendryte example detectors, shared by the `kmodel-yolo` example and
//! the end-to-end tests:
//!
//! - [`region`]: the YOLOv2 region layer of the Kendryte demos (sigmoid x/y/objectness,
//!   softmax over classes, anchors, per-class non-maximum suppression);
//! - [`ultraface`]: priors and box decoding of Ultra-Light-Fast-Generic-Face-Detector
//!   (RFB-320, slim-320);
//! - [`draw`]: rectangles on an RGB picture.

/// A detection in pixels of the input picture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    /// Class index.
    pub class: usize,
    /// Probability.
    pub prob: f32,
    /// Left.
    pub x1: f32,
    /// Top.
    pub y1: f32,
    /// Right.
    pub x2: f32,
    /// Bottom.
    pub y2: f32,
}

impl Detection {
    /// A box of `class` given as centre and size `[cx, cy, w, h]` in fractions of the picture,
    /// in pixels of an `img_w × img_h` picture.
    pub fn from_center(class: usize, prob: f32, [cx, cy, w, h]: [f32; 4], img_w: f32, img_h: f32) -> Detection {
        Detection {
            class,
            prob,
            x1: (cx - w / 2.0) * img_w,
            y1: (cy - h / 2.0) * img_h,
            x2: (cx + w / 2.0) * img_w,
            y2: (cy + h / 2.0) * img_h,
        }
    }

    /// Intersection over union with another detection.
    pub fn iou(&self, o: &Detection) -> f32 {
        let w = (self.x2.min(o.x2) - self.x1.max(o.x1)).max(0.0);
        let h = (self.y2.min(o.y2) - self.y1.max(o.y1)).max(0.0);
        let i = w * h;
        let area = |d: &Detection| (d.x2 - d.x1) * (d.y2 - d.y1);
        i / (area(self) + area(o) - i)
    }
}

/// Greedy non-maximum suppression (per class): keeps the best box and drops boxes of the same
/// class that overlap it by more than `iou`.
pub fn nms(mut dets: Vec<Detection>, iou: f32) -> Vec<Detection> {
    dets.sort_by(|a, b| b.prob.total_cmp(&a.prob));
    let mut keep: Vec<Detection> = Vec::new();
    for d in dets {
        if keep.iter().all(|k| k.class != d.class || k.iou(&d) <= iou) {
            keep.push(d);
        }
    }
    keep
}

pub mod region {
    //! The YOLOv2 region layer used by the Kendryte 20-class and face demos.

    use super::{Detection, nms};

    /// PASCAL VOC class names, in the demo's order.
    pub const VOC_CLASSES: [&str; 20] = [
        "aeroplane",
        "bicycle",
        "bird",
        "boat",
        "bottle",
        "bus",
        "car",
        "cat",
        "chair",
        "cow",
        "diningtable",
        "dog",
        "horse",
        "motorbike",
        "person",
        "pottedplant",
        "sheep",
        "sofa",
        "train",
        "tvmonitor",
    ];

    /// The 20-class demo's anchors (w, h in grid cells).
    pub const VOC_ANCHORS: [(f32, f32); 5] = [(1.08, 1.19), (3.42, 4.41), (6.63, 11.38), (9.42, 5.11), (16.62, 10.52)];

    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// Decodes a `[anchors × (5 + classes)] × grid_h × grid_w` output (NCHW f32) into
    /// detections on a `img_w × img_h` picture: probability = objectness × class softmax,
    /// kept above `threshold`, then per-class NMS at `nms_iou`.
    #[allow(clippy::too_many_arguments)]
    pub fn decode(
        out: &[f32],
        grid_w: usize,
        grid_h: usize,
        anchors: &[(f32, f32)],
        classes: usize,
        img_w: f32,
        img_h: f32,
        threshold: f32,
        nms_iou: f32,
    ) -> Vec<Detection> {
        let wh = grid_w * grid_h;
        let per = 5 + classes;
        assert_eq!(out.len(), anchors.len() * per * wh, "output size does not match the grid");
        let at = |n: usize, entry: usize, loc: usize| out[(n * per + entry) * wh + loc];
        let mut dets = Vec::new();
        for loc in 0..wh {
            let (row, col) = (loc / grid_w, loc % grid_w);
            for (n, &(aw, ah)) in anchors.iter().enumerate() {
                let x = (col as f32 + sigmoid(at(n, 0, loc))) / grid_w as f32;
                let y = (row as f32 + sigmoid(at(n, 1, loc))) / grid_h as f32;
                let w = at(n, 2, loc).exp() * aw / grid_w as f32;
                let h = at(n, 3, loc).exp() * ah / grid_h as f32;
                let obj = sigmoid(at(n, 4, loc));
                let max = (0..classes).map(|c| at(n, 5 + c, loc)).fold(f32::MIN, f32::max);
                let sum: f32 = (0..classes).map(|c| (at(n, 5 + c, loc) - max).exp()).sum();
                let (best, p) = (0..classes)
                    .map(|c| (c, obj * (at(n, 5 + c, loc) - max).exp() / sum))
                    .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
                if p > threshold {
                    dets.push(Detection::from_center(best, p, [x, y, w, h], img_w, img_h));
                }
            }
        }
        nms(dets, nms_iou)
    }
}

pub mod ultraface {
    //! Ultra-Light-Fast-Generic-Face-Detector (320 × 240): priors and decoding.

    use super::{Detection, nms};

    const MIN_BOXES: [&[f32]; 4] = [&[10.0, 16.0, 24.0], &[32.0, 48.0], &[64.0, 96.0], &[128.0, 192.0, 256.0]];
    const STRIDES: [f32; 4] = [8.0, 16.0, 32.0, 64.0];

    /// The priors (cx, cy, w, h), normalised, in the network's output order (4420 for
    /// 320 × 240).
    pub fn priors(w: f32, h: f32) -> Vec<[f32; 4]> {
        let mut out = Vec::new();
        for (mins, s) in MIN_BOXES.iter().zip(STRIDES) {
            let (fw, fh) = ((w / s).ceil() as usize, (h / s).ceil() as usize);
            let (sw, sh) = (w / s, h / s);
            for j in 0..fh {
                for i in 0..fw {
                    for m in mins.iter() {
                        let c = |v: f32| v.clamp(0.0, 1.0);
                        out.push([c((i as f32 + 0.5) / sw), c((j as f32 + 0.5) / sh), c(m / w), c(m / h)]);
                    }
                }
            }
        }
        out
    }

    /// Decodes `boxes` (priors × 4 regressions) and `scores` (priors × [background, face])
    /// into faces on a `w × h` picture.
    pub fn decode(boxes: &[f32], scores: &[f32], w: f32, h: f32, threshold: f32, nms_iou: f32) -> Vec<Detection> {
        let pri = priors(w, h);
        assert_eq!(boxes.len(), pri.len() * 4, "box count does not match the priors");
        let mut dets = Vec::new();
        for (i, p) in pri.iter().enumerate() {
            let score = scores[2 * i + 1];
            if score <= threshold {
                continue;
            }
            let b = &boxes[4 * i..4 * i + 4];
            let cx = b[0] * 0.1 * p[2] + p[0];
            let cy = b[1] * 0.1 * p[3] + p[1];
            let bw = (b[2] * 0.2).exp() * p[2];
            let bh = (b[3] * 0.2).exp() * p[3];
            dets.push(Detection::from_center(0, score, [cx, cy, bw, bh], w, h));
        }
        nms(dets, nms_iou)
    }
}

pub mod draw {
    //! Rectangles on an RGB picture.

    use image::{Rgb, RgbImage};

    /// A colour per class (fixed palette).
    pub fn color(class: usize) -> Rgb<u8> {
        const P: [[u8; 3]; 8] = [
            [230, 25, 75],
            [60, 180, 75],
            [255, 225, 25],
            [0, 130, 200],
            [245, 130, 48],
            [145, 30, 180],
            [70, 240, 240],
            [240, 50, 230],
        ];
        Rgb(P[class % P.len()])
    }

    /// Draws a `thickness`-pixel rectangle, clipped to the picture.
    pub fn rect(img: &mut RgbImage, x1: f32, y1: f32, x2: f32, y2: f32, c: Rgb<u8>, thickness: u32) {
        let (w, h) = (img.width() as i64, img.height() as i64);
        let (x1, y1, x2, y2) = (x1.round() as i64, y1.round() as i64, x2.round() as i64, y2.round() as i64);
        for t in 0..thickness as i64 {
            for x in x1..=x2 {
                for y in [y1 + t, y2 - t] {
                    if (0..w).contains(&x) && (0..h).contains(&y) {
                        img.put_pixel(x as u32, y as u32, c);
                    }
                }
            }
            for y in y1..=y2 {
                for x in [x1 + t, x2 - t] {
                    if (0..w).contains(&x) && (0..h).contains(&y) {
                        img.put_pixel(x as u32, y as u32, c);
                    }
                }
            }
        }
    }

    /// A planar (CHW) u8 copy of an RGB picture, as the KPU models take it.
    pub fn to_chw(img: &RgbImage) -> Vec<u8> {
        let (w, h) = (img.width() as usize, img.height() as usize);
        let mut out = vec![0u8; 3 * w * h];
        for (x, y, p) in img.enumerate_pixels() {
            for c in 0..3 {
                out[c * w * h + y as usize * w + x as usize] = p.0[c];
            }
        }
        out
    }
}
